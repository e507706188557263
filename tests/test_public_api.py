"""The names ``import mcpserve`` offers, and ``__all__`` saying exactly which."""

import types

import pytest

import mcpserve


def public_attributes() -> set[str]:
    return {
        name
        for name, value in vars(mcpserve).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


@pytest.mark.parametrize("name", mcpserve.__all__)
def test_every_name_in_all_is_an_attribute(name: str) -> None:
    assert hasattr(mcpserve, name)


def test_every_public_attribute_is_listed_in_all() -> None:
    assert public_attributes() - set(mcpserve.__all__) == set()


def test_all_has_no_duplicates() -> None:
    assert len(mcpserve.__all__) == len(set(mcpserve.__all__))


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from mcpserve import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(mcpserve.__all__)


def test_version_is_a_string() -> None:
    assert isinstance(mcpserve.__version__, str)
    assert mcpserve.__version__
