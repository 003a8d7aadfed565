"""Config's declared attributes are the options table's: one per option, each typed as its kind's
parser returns, with None where the table's default is None. The table (options.OPTIONS) stays the
one place that lists the options; the declarations are there for readers and the type checker."""

from __future__ import annotations

from npuprof_launch.common import options


def expected_annotation(option: options.Option) -> str:
    """The type text an option's attribute must carry: its parser's return type, or None when unset."""
    parsed = options.PARSERS[option.kind].__annotations__["return"]
    return f"{parsed} | None" if option.default is None else parsed


def test_config_declares_one_attribute_per_option():
    declared = set(options.Config.__annotations__)
    table = {option.attr for option in options.OPTIONS}
    assert not table - declared, f"options without a declared attribute on Config: {sorted(table - declared)}"
    assert not declared - table, f"attributes declared on Config that no option has: {sorted(declared - table)}"


def test_each_attribute_is_typed_by_its_option_kind():
    declared = options.Config.__annotations__
    wrong = {
        option.attr: (declared[option.attr], expected_annotation(option))
        for option in options.OPTIONS
        if option.attr in declared and declared[option.attr] != expected_annotation(option)
    }
    assert not wrong, f"declared, expected: {wrong}"


def test_a_resolved_config_has_every_declared_attribute():
    config, problems = options.resolve({}, {})
    assert problems == []
    assert {name for name in options.Config.__annotations__ if not hasattr(config, name)} == set()
