"""Content blocks a tool or prompt returns, and the conversion of return values to them.

A client's sampling handler returns the same blocks, so the conversion lives in
:mod:`mcpserve._content`; the server's modules import it by this name.
"""

from ..._content import ContentBlock as ContentBlock
from ..._content import is_content_block as is_content_block
from ..._content import json_text as json_text
from ..._content import json_value as json_value
from ..._content import text as text
from ..._content import to_block as to_block
from ..._content import to_blocks as to_blocks
