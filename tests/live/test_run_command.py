"""The run tool's command language: what it reads into a RunCommand, and every refusal naming
the reason and the grammar (docs: spark_ide/live/run_command.py)."""

from __future__ import annotations

import shlex

import pytest

from spark_ide.live.run_command import MAX_COMMAND_CHARS, CommandRefused, RunCommand, parse_run_command
from spark_ide.upstream.dialects import RUN_RULES

FILES = {"main.py", "src/app.py", "data files/in.txt", "tests/test_app.py", "tests/unit/test_x.py", "café.py"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("python main.py", RunCommand(tests=False, path="main.py")),
        ("python3 src/app.py 1 2", RunCommand(tests=False, path="src/app.py", args=("1", "2"))),
        ("python main.py -v --name=x -", RunCommand(tests=False, path="main.py", args=("-v", "--name=x", "-"))),
        ("python 'data files/in.txt' 'a b' \"c d\" ''",
         RunCommand(tests=False, path="data files/in.txt", args=("a b", "c d", ""))),
        ("python main.py '$HOME' 'a;b' '(x)'", RunCommand(tests=False, path="main.py", args=("$HOME", "a;b", "(x)"))),
        ("pytest", RunCommand(tests=True)),
        ("  pytest   -x\t-q  ", RunCommand(tests=True, args=("-x", "-q"))),
        ("python -m pytest tests", RunCommand(tests=True, args=("tests",))),
        ("pytest -k 'add and not slow' tests/unit",
         RunCommand(tests=True, args=("-k", "add and not slow", "tests/unit"))),
        ("pytest tests/test_app.py::TestApp::test_add[1-2] -x",
         RunCommand(tests=True, args=("tests/test_app.py::TestApp::test_add[1-2]", "-x"))),
    ],
)
def test_a_command_reads_into_the_run_the_sandbox_starts(text: str, expected: RunCommand) -> None:
    assert parse_run_command(text, files=FILES) == expected


def test_a_persons_run_is_the_same_description_without_arguments() -> None:
    assert RunCommand.of_request(path="main.py", tests=False) == parse_run_command("python main.py")
    assert RunCommand.of_request(path="", tests=True) == parse_run_command("pytest")
    assert RunCommand.of_request(path="main.py", tests=True) == RunCommand(tests=True)  # a tests run takes no path


def test_the_command_text_reads_back_as_the_same_run() -> None:
    for text in ["python 'data files/in.txt' 'a b' -v", "pytest -x -k 'add or sub' tests", "python main.py"]:
        command = parse_run_command(text, files=FILES)
        assert parse_run_command(command.text, files=FILES) == command
    assert parse_run_command("python3 -m pytest -q").text == "pytest -q"
    assert shlex.split(RunCommand(tests=False, path="main.py", args=("it's",)).text) == ["python", "main.py", "it's"]


def test_paths_are_canonical_workspace_paths() -> None:
    decomposed = "cafe\u0301.py"  # NFD, as some systems type it
    assert parse_run_command(f"python {decomposed}", files=FILES).path == "café.py"


def refusal(text: str, **kwargs: object) -> str:
    with pytest.raises(CommandRefused) as caught:
        parse_run_command(text, **kwargs)  # type: ignore[arg-type]
    assert str(caught.value).endswith(RUN_RULES)  # every refusal states the grammar
    assert str(caught.value).startswith(caught.value.reason)
    return caught.value.reason


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "the command is empty"),
        ("   ", "the command is empty"),
        ("ls -la", "'ls' is not a command the run tool knows: only python and pytest"),
        ("sh -c pytest", "'sh' is not a command"),
        ("python", "python needs the file to run"),
        ("python -c 'import os'", "its option '-c' is not allowed"),
        ("python -m http.server", "its option '-m' is not allowed"),
        ("pytest -v", "the pytest option '-v' is not allowed here: only -x, -q and -k EXPRESSION"),
        ("pytest -p no:warnings", "the pytest option '-p' is not allowed"),
        ("pytest --rootdir=/", "the pytest option '--rootdir=/' is not allowed"),
        ("pytest -xq", "the pytest option '-xq' is not allowed"),
        ("pytest -k", "-k needs an expression after it"),
        ("pytest -k -x", "-k needs an expression after it"),
        ("pytest -k ''", "-k needs an expression after it"),
        ("pytest tests/test_app.py::", "does not name a test"),
        ("pytest 'tests/test_app.py::test add'", "does not name a test"),
        ("python main.py 'open", "a quote is not closed"),
        ("pytest\npython main.py", "one command on one line"),
        ("python main.py \x00", "control character"),
        ("python main.py " + "a" * MAX_COMMAND_CHARS, f"longer than {MAX_COMMAND_CHARS} characters"),
        ("python main.py" + " a" * 64, "more than 64 words"),
    ],
)
def test_anything_else_is_refused_with_the_reason(text: str, reason: str) -> None:
    assert reason in refusal(text, files=FILES)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("pytest; rm -rf ~", "';'"),
        ("pytest && python main.py", "'&'"),
        ("python main.py | head", "'|'"),
        ("python main.py > out.txt", "'>' (quote it)"),
        ("python main.py < in.txt", "'<' (quote it)"),
        ("python main.py $(id)", "'$'"),
        ("python main.py `id`", "'`'"),
        ('python main.py "$HOME"', "'$' (even inside double quotes)"),
        ('python main.py "a\\"b"', "a backslash (even inside double quotes)"),
        ("python main.py a\\ b", "a backslash"),
        ("pytest -k (a)", "'(' (quote it)"),
    ],
)
def test_shell_syntax_is_refused_never_interpreted(text: str, shown: str) -> None:
    assert refusal(text, files=FILES) == f"there is no shell here: {shown} cannot be used"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("python /etc/passwd", "the path must be relative to the workspace, not absolute"),
        ("python ../secret.py", "'..' is not allowed in a workspace path"),
        ("python src/../main.py", "'..' is not allowed"),
        ("python ./main.py", "'.' is not allowed"),
        ("pytest tests//unit", "empty folder name"),
        ("pytest /tmp", "not absolute"),
        ("pytest ../tests/test_app.py::test_add", "'..' is not allowed"),
        ("python 'src\\app.py'", "use '/' to separate folders"),
        ("python ' main.py'", "starts or ends with a blank"),
        ("python " + "a/" * 300 + "b.py", "longer than 512 characters"),
    ],
)
def test_a_bad_path_is_refused_by_the_workspace_rules(text: str, reason: str) -> None:
    assert reason in refusal(text, files=FILES)


def test_a_deployments_path_limit_applies() -> None:
    assert "longer than 8 characters" in refusal("python src/app.py", max_path_length=8)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("python missing.py", "there is no file 'missing.py' in the workspace to run"),
        ("python tests", "there is no file 'tests' in the workspace to run"),  # a folder is not a program
        ("pytest nowhere", "there is no file or folder 'nowhere' in the workspace"),
        ("pytest test", "there is no file or folder 'test'"),  # a prefix of a name is no folder
        ("pytest tests/missing.py::test_a", "there is no file 'tests/missing.py'"),
        ("pytest tests/unit::test_a", "there is no file 'tests/unit'"),  # a test is in a file
    ],
)
def test_given_the_files_every_path_must_name_one(text: str, reason: str) -> None:
    assert reason in refusal(text, files=FILES)
    parse_run_command(text)  # without the files only the form is checked
