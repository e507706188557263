"""How the server calls the functions registered on it: async, plain or blocking.

The rules are shared with the client's handlers, so they live in :mod:`mcpserve._invoking`;
the server's modules import them by this name.
"""

from .._invoking import Invoker as Invoker
from .._invoking import blocking as blocking
from .._invoking import is_async as is_async
from .._invoking import is_synchronous as is_synchronous
from .._invoking import make_invoker as make_invoker
