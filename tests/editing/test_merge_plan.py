"""How a small model's code merges into a file: the plan on plain text (no document)."""

from __future__ import annotations

import ast
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.editing.merge import MergePlan, MergeReport, is_python, plan_merge, separator


def merged(base: str, code: str, *, python: bool = True) -> tuple[str, MergePlan]:
    plan = plan_merge(base, code, python=python)
    text = base
    for splice in reversed(plan.splices):
        text = text[: splice.start] + splice.text + text[splice.stop :]
    return text, plan


USER = """\
# My helpers, written by hand.
import os


def greet(name):
    # say hello
    return "hi " + name


def is_prime(n):
    return False


print(greet(os.getlogin()))
"""


def test_a_function_of_the_same_name_is_replaced_in_place_and_the_rest_is_kept() -> None:
    code = "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"
    text, plan = merged(USER, code)
    assert text == """\
# My helpers, written by hand.
import os


def greet(name):
    # say hello
    return "hi " + name


def is_prime(n):
    return n > 1 and all(n % i for i in range(2, n))


print(greet(os.getlogin()))
"""
    assert plan.report == MergeReport(replaced=("is_prime",))
    assert plan.lines == (10, 11)
    # Only the changed middle of the function is touched.
    assert [(s.start, s.stop, s.text) for s in plan.splices] == [
        (USER.index("False"), USER.index("False") + 5, "n > 1 and all(n % i for i in range(2, n))")
    ]


def test_a_class_is_replaced_whole() -> None:
    base = "class Point:\n    x = 0\n\n\nORIGIN = Point()\n"
    code = "class Point:\n    def __init__(self, x):\n        self.x = x\n"
    text, plan = merged(base, code)
    assert text == "class Point:\n    def __init__(self, x):\n        self.x = x\n\n\nORIGIN = Point()\n"
    assert plan.report.as_dict() == {"replaced": ["Point"], "added": []}


def test_assignments_of_the_same_name_are_replaced() -> None:
    base = "LIMIT = 10\nNAME: str = 'a'\nother = LIMIT * 2\n"
    text, plan = merged(base, "LIMIT = 100\nNAME: str = 'b'\n")
    assert text == "LIMIT = 100\nNAME: str = 'b'\nother = LIMIT * 2\n"
    assert plan.report.replaced == ("LIMIT", "NAME")


def test_a_decorated_function_is_replaced_with_its_decorators() -> None:
    base = "import functools\n\n\n@functools.cache\n@trace\ndef fib(n):\n    return n\n\n\nx = 1\n"
    code = "@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    text, plan = merged(base, code)
    assert text == (
        "import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n\nx = 1\n"
    )
    assert plan.report.replaced == ("fib",)
    assert plan.lines == (4, 6)


def test_a_decorated_function_in_the_file_is_replaced_by_an_undecorated_one() -> None:
    base = "@staticmethod\ndef f():\n    return 1\n"
    text, _ = merged(base, "def f():\n    return 2\n")
    assert text == "def f():\n    return 2\n"


def test_a_new_function_goes_after_the_last_definition() -> None:
    code = "def is_even(n):\n    return n % 2 == 0\n"
    text, plan = merged(USER, code)
    assert text == USER.replace(
        "    return False\n",
        "    return False\n\ndef is_even(n):\n    return n % 2 == 0\n",
    )
    assert plan.report.as_dict() == {"replaced": [], "added": ["is_even"]}
    assert plan.lines == (13, 14)


def test_without_definitions_new_ones_go_at_the_end() -> None:
    text, plan = merged("# notes\nprint('hi')\n", "def f():\n    return 1\n")
    assert text == "# notes\nprint('hi')\n\ndef f():\n    return 1\n"
    assert plan.lines == (4, 5)


def test_new_imports_go_after_the_existing_ones_and_known_ones_are_not_repeated() -> None:
    code = "import os\nimport math\nfrom typing import Any\n\n\ndef is_prime(n):\n    return math.isqrt(n) > 0\n"
    text, plan = merged(USER, code)
    assert text == USER.replace("import os\n", "import os\nimport math\nfrom typing import Any\n").replace(
        "    return False", "    return math.isqrt(n) > 0"
    )
    assert plan.report == MergeReport(replaced=("is_prime",), added=("import math", "from typing import Any"))
    assert plan.lines == (12, 13)  # the code, not the imports


def test_without_imports_they_go_after_the_docstring_or_before_the_first_statement() -> None:
    text, _ = merged('"""Tools."""\ndef a():\n    return 1\n', "import math\n")
    assert text == '"""Tools."""\n\nimport math\n\ndef a():\n    return 1\n'
    text, plan = merged("# header\n\ndef a():\n    return 1\n", "import math\n")
    assert text == "# header\n\nimport math\n\ndef a():\n    return 1\n"
    assert plan.lines == (3, 3)
    text, _ = merged("#!/usr/bin/env python\n# run me\nmain()\n", "import sys\n")
    assert text == "#!/usr/bin/env python\n\nimport sys\n\n# run me\nmain()\n"


def test_usage_examples_go_at_the_end_once() -> None:
    code = "def is_prime(n):\n    return n > 1\n\n\nprint(is_prime(7))\nprint(is_prime(8))\n"
    text, plan = merged(USER, code)
    assert text == USER.replace("    return False", "    return n > 1") + "\nprint(is_prime(7))\nprint(is_prime(8))\n"
    assert plan.report == MergeReport(replaced=("is_prime",), added=("print(is_prime(7))", "print(is_prime(8))"))
    again, plan = merged(text, "print( is_prime(7) )\n")
    assert again == text
    assert plan.report == MergeReport()
    assert not plan.report.changed


def test_a_main_block_of_the_code_is_added_and_the_files_one_kept() -> None:
    base = 'def a():\n    return 1\n\nif __name__ == "__main__":\n    a()\n'
    code = 'def b():\n    return 2\n\nif __name__ == "__main__":\n    print(b())\n'
    text, plan = merged(base, code)
    assert text == (
        'def a():\n    return 1\n\ndef b():\n    return 2\n\nif __name__ == "__main__":\n    a()\n'
        '\nif __name__ == "__main__":\n    print(b())\n'
    )
    assert plan.report.added == ("b", 'if __name__ == "__main__":')


def test_identical_code_changes_nothing() -> None:
    code = "import os\n\ndef is_prime(n):\n    return False\n"
    text, plan = merged(USER, code)
    assert text == USER
    assert plan.splices == ()
    assert plan.report.as_dict() == {"replaced": [], "added": []}
    assert plan.lines == (10, 11)


def test_a_comment_block_above_the_new_version_replaces_the_old_ones() -> None:
    base = "# old words\ndef f():\n    return 1\n"
    text, _ = merged(base, "# new words\ndef f():\n    return 2\n")
    assert text == "# new words\ndef f():\n    return 2\n"
    text, _ = merged(base, "def f():\n    return 2\n")
    assert text == "# old words\ndef f():\n    return 2\n"


def test_the_last_binding_of_a_name_is_replaced() -> None:
    base = "x = 1\nprint(x)\nx = 2\n"
    text, _ = merged(base, "x = 3\n")
    assert text == "x = 1\nprint(x)\nx = 3\n"


def test_the_codes_later_binding_of_a_name_counts() -> None:
    text, plan = merged("def f():\n    return 0\n", "def f():\n    return 1\n\ndef f():\n    return 2\n")
    assert text == "def f():\n    return 2\n"
    assert plan.report.replaced == ("f",)


def test_statements_sharing_a_line_are_one_statement() -> None:
    text, plan = merged("a = 1; b = 2\n", "a = 5\n")
    assert text == "a = 1; b = 2\n\na = 5\n"
    assert plan.report.added == ("a",)


def test_a_file_without_a_final_newline() -> None:
    text, _ = merged("def f():\n    return 1", "def f():\n    return 2\n")
    assert text == "def f():\n    return 2"
    text, plan = merged("x = 1", "def g():\n    return 2\n")
    assert text == "x = 1\n\ndef g():\n    return 2\n"
    assert plan.lines == (3, 4)


def test_the_codes_docstring_is_left_out() -> None:
    text, plan = merged("x = 1\n", '"""Prime numbers."""\n\ny = 2\n')
    assert text == "x = 1\n\ny = 2\n"
    assert plan.report.added == ("y",)


def test_a_syntax_error_in_the_file_inserts_the_code_at_the_end() -> None:
    base = "def broken(:\n    pass\n"
    text, plan = merged(base, "def broken():\n    pass\n")
    assert text == "def broken(:\n    pass\n\ndef broken():\n    pass\n"
    assert plan.report.as_dict() == {"inserted": True}
    assert plan.lines == (4, 5)


def test_a_syntax_error_in_the_code_inserts_it_at_the_end() -> None:
    text, plan = merged("def ok():\n    pass", "def ok(:\n    return\n")
    assert text == "def ok():\n    pass\n\ndef ok(:\n    return\n"
    assert plan.report == MergeReport(inserted=True)


def test_other_languages_are_inserted_at_the_end_once() -> None:
    base = "function a() {\n  return 1;\n}\n"
    code = "function b() {\n  return 2;\n}\n"
    text, plan = merged(base, code, python=False)
    assert text == base + "\n" + code
    assert plan.report.as_dict() == {"inserted": True}
    again, plan = merged(text, code, python=False)
    assert again == text
    assert plan.report.as_dict() == {"inserted": False}
    assert plan.lines == (5, 7)


def test_only_whole_lines_count_as_already_there() -> None:
    text, plan = merged("let x = 10;\n", "let x = 1;\n", python=False)
    assert text == "let x = 10;\n\nlet x = 1;\n"
    assert plan.report.inserted is True
    text, plan = merged("a\nlet x = 1;\nb", "let x = 1;\n", python=False)
    assert text == "a\nlet x = 1;\nb"
    assert plan.lines == (2, 2)


def test_an_empty_or_blank_file_gets_just_the_code() -> None:
    code = "import math\n\ndef f():\n    return 1\n\nprint(f())\n"
    for base in ("", "  \n\n"):
        text, plan = merged(base, code)
        assert text == code
        assert plan.report.added == ("import math", "f", "print(f())")
        assert plan.lines == (1, 6)
    text, plan = merged("", "<p>hi</p>\n", python=False)
    assert text == "<p>hi</p>\n"
    assert plan.report == MergeReport(inserted=True)


def test_empty_code_changes_nothing() -> None:
    text, plan = merged(USER, "")
    assert text == USER
    assert not plan.report.changed


def test_which_files_merge_as_python_and_the_gap_before_added_code() -> None:
    assert is_python("a/b.py", None)
    assert is_python("notes.txt", "python")
    assert not is_python("app.js", "javascript")
    assert [separator(text) for text in ("", "x\n\n", "x\n", "x")] == ["", "", "\n", "\n\n"]


PIECES = [
    "def f(x):\n    return x\n", "def f(x):\n    return x + 1\n", "import os\n", "from a import b\n",
    "print(f(1))\n", "x = 1\n", "x = 2\n", "\n", "class A:\n    pass\n", "@dec\ndef g():\n    pass\n",
    "# note\n", "é = 2\n", "if __name__ == '__main__':\n    f(2)\n", "h = 3; k = 4\n", '"""doc"""\n',
]


@settings(max_examples=300, deadline=None)
@given(
    base=st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join),
    code=st.lists(st.sampled_from(PIECES), max_size=6).map("".join),
    newline=st.booleans(),
)
def test_a_merge_of_valid_python_is_valid_python_with_every_name_of_both(base: str, code: str, newline: bool) -> None:
    base = base if newline else base.rstrip("\n") or "x = 0"
    text, plan = merged(base, code)
    tree = ast.parse(text)
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    for side in (base, code):
        assert names >= {node.name for node in ast.parse(side).body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    for comment in re.findall(r"^#.*$", base, flags=re.MULTILINE):
        assert comment in text
    if plan.lines is not None:
        assert 1 <= plan.lines[0] <= plan.lines[1] <= len(text.splitlines())
