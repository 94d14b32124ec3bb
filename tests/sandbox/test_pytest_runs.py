"""The workspace's tests run with the student runtime's pytest."""

from __future__ import annotations

from spark_ide.sandbox.core import RunStatus, Sandbox

CALC = "def add(a, b):\n    return a + b\n"


def test_pytest_runs_the_workspace_tests(sandbox: Sandbox) -> None:
    files = {
        "calc.py": CALC,
        "tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\n"
                              "def test_wrong():\n    assert add(1, 1) == 3\n",
    }
    result = sandbox.run(files, tests=True)
    assert result.status is RunStatus.FAILED and result.exit_code == 1, result.stderr
    assert "1 failed, 1 passed" in result.stdout
    assert "assert 2 == 3" in result.stdout


def test_pytest_on_one_file_passes(sandbox: Sandbox) -> None:
    files = {
        "calc.py": CALC,
        "test_good.py": "from calc import add\n\ndef test_add(tmp_path):\n    (tmp_path / 'x').write_text('ok')\n"
                        "    assert add(2, 2) == 4\n",
        "test_bad.py": "def test_bad():\n    assert False\n",
    }
    result = sandbox.run(files, path="test_good.py", tests=True)
    assert result.status is RunStatus.OK, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_pytest_takes_the_run_tools_paths_and_options(sandbox: Sandbox) -> None:
    """A model's ``pytest -x -k add tests/test_calc.py`` (live.run_command): its words follow
    pytest, paths relative to the workspace, which is the working directory."""
    files = {
        "calc.py": CALC,
        "tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\n"
                              "def test_wrong():\n    assert add(1, 1) == 3\n\ndef test_also_wrong():\n    assert 0\n",
        "tests/test_other.py": "def test_other():\n    assert False\n",
    }
    result = sandbox.run(files, tests=True, args=("-q", "-k", "add", "tests/test_calc.py"))
    assert result.status is RunStatus.OK, result.stdout + result.stderr
    assert "1 passed, 2 deselected" in result.stdout
    result = sandbox.run(files, tests=True, args=("-x", "tests/test_calc.py::test_wrong", "tests/test_other.py"))
    assert result.exit_code == 1 and "1 failed" in result.stdout and "test_other" not in result.stdout


def test_a_file_gets_its_arguments_as_given(sandbox: Sandbox) -> None:
    files = {"main.py": "import sys\nprint(sys.argv[1:])\nprint(open(sys.argv[1]).read())\n", "in.txt": "data"}
    result = sandbox.run(files, path="main.py", args=("in.txt", "two words", "$HOME", "-v"))
    assert result.status is RunStatus.OK, result.stderr
    assert result.stdout == "['in.txt', 'two words', '$HOME', '-v']\ndata\n"
