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
from ._invoking import blocking as blocking
from ._version import __version__ as __version__
from .protocol.constants import LATEST_VERSION as LATEST_VERSION
from .protocol.core import Auth as Auth
from .protocol.errors import InsufficientScope as InsufficientScope
from .protocol.errors import InvalidParams as InvalidParams
from .protocol.errors import MCPError as MCPError
from .protocol.errors import MethodNotFound as MethodNotFound
from .protocol.errors import MissingClientCapability as MissingClientCapability
from .protocol.errors import ResourceNotFound as ResourceNotFound
from .protocol.errors import ToolError as ToolError
from .server.context.context import Context as Context
from .server.context.rounds import InputRequired as InputRequired
from .server.entries.cache import CachePolicy as CachePolicy
from .server.entries.catalogue import Caller as Caller
from .server.entries.catalogue import Component as Component
from .server.entries.dependencies import Depends as Depends
from .server.entries.resources import Contents as Contents
from .server.entries.resources import Resource as Resource
from .server.entries.resources import ResourceTemplate as ResourceTemplate
from .server.entries.tools import Tool as Tool
from .server.entries.tools import ToolResult as ToolResult
from .server.middleware import CallNext as CallNext
from .server.middleware import Middleware as Middleware
from .server.schema.errors import RegistrationError as RegistrationError
from .server.schema.signature import Header as Header
from .server.server import Server as Server

if typing.TYPE_CHECKING:  # each loads on first use, by __getattr__ below
    from .backends.redis.tasks import RedisTaskStore as RedisTaskStore
    from .backends.sqlite.tasks import SQLiteTaskStore as SQLiteTaskStore
    from .client.client import Client as Client
    from .client.oauth import ClientCredentials as ClientCredentials
    from .client.oauth import JWTBearer as JWTBearer
    from .client.oauth import OAuth as OAuth
    from .client.oauth import OAuthError as OAuthError
    from .client.skills import LoadedSkill as LoadedSkill
    from .client.skills import SkillVerificationError as SkillVerificationError
    from .client.tasks import TaskCancelled as TaskCancelled
    from .client.tasks import TaskHandle as TaskHandle
    from .compose.mount.mount import Mount as Mount
    from .compose.openapi import OpenAPIOperation as OpenAPIOperation
    from .compose.openapi import fetch_openapi as fetch_openapi
    from .extensions.apps import App as App
    from .extensions.apps import AppCSP as AppCSP
    from .extensions.apps import supports_apps as supports_apps
    from .extensions.skills.skill import Skill as Skill
    from .extensions.tasks.records import MemoryTaskStore as MemoryTaskStore
    from .extensions.tasks.records import TaskRecord as TaskRecord
    from .extensions.tasks.records import TaskStore as TaskStore
    from .extensions.tasks.records import TaskStoreUnavailable as TaskStoreUnavailable
    from .middleware import RateLimit as RateLimit
    from .middleware import ResponseCache as ResponseCache
    from .middleware import ResponseSizeLimit as ResponseSizeLimit
    from .middleware import StructuredLogging as StructuredLogging
    from .middleware import Timing as Timing
    from .protocol.input_answers import ElicitResult as ElicitResult
    from .protocol.input_answers import Root as Root
    from .protocol.input_answers import SampleResult as SampleResult
    from .server.context.input_requests import Elicit as Elicit
    from .server.context.input_requests import ListRoots as ListRoots
    from .server.context.input_requests import Sample as Sample
    from .server.entries.completions import Completion as Completion
    from .server.entries.media import Audio as Audio
    from .server.entries.media import EmbeddedResource as EmbeddedResource
    from .server.entries.media import Image as Image
    from .server.entries.media import ResourceLink as ResourceLink
    from .server.entries.prompts import Message as Message
    from .server.entries.prompts import Prompt as Prompt
    from .server.http_request import HTTPRequest as HTTPRequest

#: Public names whose modules load on first use: a server that never needs them (most
#: never run a client, many have no prompts, never ask the client for input or return
#: images) does not pay for importing them.
_LAZY = {
    "App": "extensions.apps",
    "AppCSP": "extensions.apps",
    "Audio": "server.entries.media",
    "Client": "client.client",
    "ClientCredentials": "client.oauth",
    "Completion": "server.entries.completions",
    "EmbeddedResource": "server.entries.media",
    "HTTPRequest": "server.http_request",
    "Elicit": "server.context.input_requests",
    "ElicitResult": "protocol.input_answers",
    "Image": "server.entries.media",
    "JWTBearer": "client.oauth",
    "ListRoots": "server.context.input_requests",
    "LoadedSkill": "client.skills",
    "MemoryTaskStore": "extensions.tasks.records",
    "OAuth": "client.oauth",
    "OAuthError": "client.oauth",
    "SkillVerificationError": "client.skills",
    "TaskCancelled": "client.tasks",
    "TaskHandle": "client.tasks",
    "Message": "server.entries.prompts",
    "Mount": "compose.mount.mount",
    "OpenAPIOperation": "compose.openapi",
    "Prompt": "server.entries.prompts",
    "RateLimit": "middleware",
    "RedisTaskStore": "backends.redis.tasks",
    "ResourceLink": "server.entries.media",
    "ResponseCache": "middleware",
    "ResponseSizeLimit": "middleware",
    "Root": "protocol.input_answers",
    "SQLiteTaskStore": "backends.sqlite.tasks",
    "Skill": "extensions.skills.skill",
    "StructuredLogging": "middleware",
    "Sample": "server.context.input_requests",
    "SampleResult": "protocol.input_answers",
    "TaskRecord": "extensions.tasks.records",
    "TaskStore": "extensions.tasks.records",
    "TaskStoreUnavailable": "extensions.tasks.records",
    "Timing": "middleware",
    "fetch_openapi": "compose.openapi",
    "supports_apps": "extensions.apps",
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
    "Caller",
    "Client",
    "ClientCredentials",
    "Completion",
    "Component",
    "Contents",
    "Context",
    "Depends",
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
    "RateLimit",
    "RedisTaskStore",
    "RegistrationError",
    "Resource",
    "ResourceLink",
    "ResourceNotFound",
    "ResourceTemplate",
    "ResponseCache",
    "ResponseSizeLimit",
    "Root",
    "SQLiteTaskStore",
    "Sample",
    "SampleResult",
    "Server",
    "Skill",
    "SkillVerificationError",
    "StructuredLogging",
    "TaskCancelled",
    "TaskHandle",
    "TaskRecord",
    "TaskStore",
    "TaskStoreUnavailable",
    "Timing",
    "Tool",
    "ToolError",
    "ToolResult",
    "blocking",
    "fetch_openapi",
    "supports_apps",
]
