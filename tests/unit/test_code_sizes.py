from tests.support.code_sizes import MAX_CLASS_LINES, MAX_FUNCTION_LINES, oversized


def _function(lines: int) -> str:
    return "def f():\n" + "    x = 1\n" * (lines - 1)


def test_a_function_over_the_limit_is_reported_with_its_place_and_length() -> None:
    found = list(oversized("\n" + _function(MAX_FUNCTION_LINES + 1), "m.py"))
    assert [(item.name, item.kind, item.line, item.lines) for item in found] == [
        ("f", "function", 2, MAX_FUNCTION_LINES + 1)
    ]


def test_a_function_at_the_limit_passes() -> None:
    assert list(oversized(_function(MAX_FUNCTION_LINES), "m.py")) == []


def test_a_long_class_is_reported_even_when_its_methods_are_short() -> None:
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(MAX_CLASS_LINES // 3 + 1))
    found = list(oversized("class C:\n" + methods, "m.py"))
    assert [item.kind for item in found] == ["class"]
    assert found[0].lines > MAX_CLASS_LINES
