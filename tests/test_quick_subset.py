"""``pytest --quick`` (``tests/support/quick_subset.py``): what it leaves out, and that a
test it keeps may not start a process.

Each test writes a small test module and runs pytest on it in this process (``pytester``),
with the plugin loaded as ``tests/conftest.py`` loads it.
"""

from __future__ import annotations

import pytest

from quick_subset import SLOW_KINDS

pytest_plugins = ["pytester"]

STARTS_A_PROCESS = """
import subprocess
import sys

def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "print('child' + ' ran')"], check=True)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    markers = "\n".join(f"    {kind}: what the project's own tests say" for kind in SLOW_KINDS)
    pytester.makeini(
        "[pytest]\naddopts = -p quick_subset --strict-markers\n"
        f"asyncio_default_fixture_loop_scope = function\nmarkers =\n{markers}\n"
    )
    return pytester


def test_a_quick_run_leaves_out_each_kind_marked_on_a_module_a_test_or_a_parameter(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_module_marked="""
        import pytest

        pytestmark = pytest.mark.node

        def test_in_a_marked_module():
            pass
        """,
        test_marked="""
        import pytest

        @pytest.mark.browser
        def test_marked():
            pass

        REDIS = pytest.param("redis", marks=pytest.mark.redis)

        @pytest.mark.parametrize("store", ["memory", REDIS])
        def test_per_store(store):
            pass

        def test_quick():
            pass
        """,
    )
    result = project.runpytest("--quick", "-v")
    result.assert_outcomes(passed=2, deselected=3)
    result.stdout.fnmatch_lines(["*test_per_store?memory? PASSED*", "*test_quick PASSED*"])


def test_a_test_that_uses_the_redis_fixture_is_marked_redis(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        @pytest.fixture
        def redis():
            return "a server"

        def test_with_redis(redis):
            pass

        def test_without():
            pass
        """
    )
    project.runpytest("--quick").assert_outcomes(passed=1, deselected=1)
    project.runpytest("-m", "redis").assert_outcomes(passed=1, deselected=1)


def test_a_quick_test_that_starts_a_process_fails_naming_the_command_and_the_markers(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(STARTS_A_PROCESS)
    result = project.runpytest("--quick")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_starts_a_process started 1 process(es) in a --quick run: *python* -c"
            " print('child' + ' ran'). Mark it with the kind it needs (subprocess, redis, node,"
            " browser, balancer, network, slow), or keep it in this process.",
        ]
    )
    assert "child ran" not in result.stdout.str()  # refused, not run


def test_a_quick_test_that_swallows_the_refusal_still_fails(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import subprocess
        import sys

        def test_hides_it():
            try:
                subprocess.run([sys.executable, "-c", "pass"], check=True)
            except Exception:
                pass
        """
    )
    result = project.runpytest("--quick")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_hides_it started 1 process(es) in a --quick run*"])


@pytest.mark.subprocess
def test_without_quick_a_test_may_start_a_process(project: pytest.Pytester) -> None:
    project.makepyfile(STARTS_A_PROCESS)
    project.runpytest().assert_outcomes(passed=1)  # the child ran: check=True
