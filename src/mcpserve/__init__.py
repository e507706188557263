"""mcpserve: fast, correct MCP servers in a few lines of Python.

::

    from mcpserve import Server

    server = Server("demo")

    @server.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    server.run()
"""

import importlib
import typing

from ._extras import MissingExtra as MissingExtra
from ._extras import needs_extra as _needs_extra
from .protocol.constants import LATEST_VERSION as LATEST_VERSION
from .protocol.core import Auth as Auth
from .protocol.errors import InsufficientScope as InsufficientScope
from .protocol.errors import InvalidParams as InvalidParams
from .protocol.errors import MCPError as MCPError
from .protocol.errors import MethodNotFound as MethodNotFound
from .protocol.errors import MissingClientCapability as MissingClientCapability
from .protocol.errors import ResourceNotFound as ResourceNotFound
from .protocol.errors import ToolError as ToolError
from .server.annotation_errors import RegistrationError as RegistrationError
from .server.context import Context as Context
from .server.handlers import blocking as blocking
from .server.middleware import CallNext as CallNext
from .server.middleware import Middleware as Middleware
from .server.resources import CachePolicy as CachePolicy
from .server.resources import Contents as Contents
from .server.resources import Resource as Resource
from .server.resources import ResourceTemplate as ResourceTemplate
from .server.rounds import InputRequired as InputRequired
from .server.schema import Header as Header
from .server.server import Server as Server
from .server.tools import Tool as Tool
from .server.tools import ToolResult as ToolResult

if typing.TYPE_CHECKING:
    from .client.client import Client as Client
    from .client.oauth import ClientCredentials as ClientCredentials
    from .client.oauth import JWTBearer as JWTBearer
    from .client.oauth import OAuth as OAuth
    from .client.oauth import OAuthError as OAuthError
    from .client.skills import LoadedSkill as LoadedSkill
    from .client.skills import SkillVerificationError as SkillVerificationError
    from .client.tasks import TaskCancelled as TaskCancelled
    from .client.tasks import TaskHandle as TaskHandle
    from .server.apps import App as App
    from .server.apps import AppCSP as AppCSP
    from .server.apps import supports_apps as supports_apps
    from .server.completions import Completion as Completion
    from .server.http_request import HTTPRequest as HTTPRequest
    from .server.input_requests import Elicit as Elicit
    from .server.input_requests import ElicitResult as ElicitResult
    from .server.input_requests import ListRoots as ListRoots
    from .server.input_requests import Root as Root
    from .server.input_requests import Sample as Sample
    from .server.input_requests import SampleResult as SampleResult
    from .server.media import Audio as Audio
    from .server.media import EmbeddedResource as EmbeddedResource
    from .server.media import Image as Image
    from .server.media import ResourceLink as ResourceLink
    from .server.mounting import Mount as Mount
    from .server.openapi import OpenAPIOperation as OpenAPIOperation
    from .server.openapi import fetch_openapi as fetch_openapi
    from .server.prompts import Message as Message
    from .server.prompts import Prompt as Prompt
    from .server.redis_tasks import RedisTaskStore as RedisTaskStore
    from .server.skill import Skill as Skill
    from .server.sqlite_tasks import SQLiteTaskStore as SQLiteTaskStore
    from .server.tasks import MemoryTaskStore as MemoryTaskStore
    from .server.tasks import TaskRecord as TaskRecord
    from .server.tasks import TaskStore as TaskStore
    from .server.tasks import TaskStoreUnavailable as TaskStoreUnavailable

#: The one place the package version is written (pyproject.toml reads it from here).
__version__ = "0.1.0"


#: Public names whose modules load on first use: a server that never needs them (most
#: never run a client, many have no prompts, never ask the client for input or return
#: images) does not pay for importing them.
_LAZY = {
    "App": "server.apps",
    "AppCSP": "server.apps",
    "Audio": "server.media",
    "Client": "client.client",
    "ClientCredentials": "client.oauth",
    "Completion": "server.completions",
    "EmbeddedResource": "server.media",
    "HTTPRequest": "server.http_request",
    "Elicit": "server.input_requests",
    "ElicitResult": "server.input_requests",
    "Image": "server.media",
    "JWTBearer": "client.oauth",
    "ListRoots": "server.input_requests",
    "LoadedSkill": "client.skills",
    "MemoryTaskStore": "server.tasks",
    "OAuth": "client.oauth",
    "OAuthError": "client.oauth",
    "SkillVerificationError": "client.skills",
    "TaskCancelled": "client.tasks",
    "TaskHandle": "client.tasks",
    "Message": "server.prompts",
    "Mount": "server.mounting",
    "OpenAPIOperation": "server.openapi",
    "Prompt": "server.prompts",
    "RedisTaskStore": "server.redis_tasks",
    "ResourceLink": "server.media",
    "Root": "server.input_requests",
    "SQLiteTaskStore": "server.sqlite_tasks",
    "Skill": "server.skill",
    "Sample": "server.input_requests",
    "SampleResult": "server.input_requests",
    "TaskRecord": "server.tasks",
    "TaskStore": "server.tasks",
    "TaskStoreUnavailable": "server.tasks",
    "fetch_openapi": "server.openapi",
    "supports_apps": "server.apps",
}


def __getattr__(name: str) -> typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _needs_extra(f"mcpserve.{name}"):
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "LATEST_VERSION",
    "MissingExtra",
    "App",
    "AppCSP",
    "Audio",
    "Auth",
    "CachePolicy",
    "CallNext",
    "Client",
    "ClientCredentials",
    "Completion",
    "Contents",
    "Context",
    "Elicit",
    "ElicitResult",
    "EmbeddedResource",
    "HTTPRequest",
    "Header",
    "Image",
    "InputRequired",
    "InsufficientScope",
    "InvalidParams",
    "JWTBearer",
    "ListRoots",
    "LoadedSkill",
    "MCPError",
    "MemoryTaskStore",
    "Message",
    "MethodNotFound",
    "Middleware",
    "MissingClientCapability",
    "Mount",
    "OAuth",
    "OAuthError",
    "OpenAPIOperation",
    "Prompt",
    "RedisTaskStore",
    "RegistrationError",
    "Resource",
    "ResourceLink",
    "ResourceNotFound",
    "ResourceTemplate",
    "Root",
    "SQLiteTaskStore",
    "Sample",
    "SampleResult",
    "Server",
    "Skill",
    "SkillVerificationError",
    "TaskCancelled",
    "TaskHandle",
    "TaskRecord",
    "TaskStore",
    "TaskStoreUnavailable",
    "Tool",
    "ToolError",
    "ToolResult",
    "blocking",
    "fetch_openapi",
    "supports_apps",
]
