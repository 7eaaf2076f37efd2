"""JAAS text from login modules, the inverse of proxy/net/sasl/jaas_parser.py: the fuzzer (fuzz/jaas.py) checks that
what the parsers accept renders back to the same login modules. The proxy itself never writes JAAS."""

from collections.abc import Iterable

from proxy.net.sasl.jaas_lexer import FILE_WORD, PROPERTY_WORD
from proxy.net.sasl.jaas_model import LoginContext, LoginModule

__all__ = ["render_jaas_config", "render_jaas_file"]


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'


def _render_module(module: LoginModule, indent: str) -> str:
    options = "".join(f"\n{indent}    {name}={_quote(value)}" for name, value in module.options.items())
    return f"{indent}{module.module} {module.flag.value}{options};"


def _check_renderable(module: LoginModule, *, file: bool) -> None:
    names = [module.module, *module.options]
    word = FILE_WORD if file else PROPERTY_WORD
    for name in names:
        if word.fullmatch(name) is None:
            raise ValueError(f"{name!r} cannot be written unquoted as a class or option name")
    if file and any("${" in value or value == "" for value in module.options.values()):
        raise ValueError("a JAAS file cannot hold an empty value or a literal '${'")


def render_jaas_config(modules: Iterable[LoginModule]) -> str:
    """A `sasl.jaas.config` value that parse_jaas_config reads back as `modules`."""
    rendered = []
    for module in modules:
        _check_renderable(module, file=False)
        rendered.append(_render_module(module, "").replace("\n    ", " "))
    return " ".join(rendered)


def render_jaas_file(contexts: Iterable[LoginContext]) -> str:
    """A JAAS file that parse_jaas_file reads back as `contexts` (without system properties to expand)."""
    blocks = []
    for context in contexts:
        if FILE_WORD.fullmatch(context.name) is None:
            raise ValueError(f"{context.name!r} cannot be written as an entry name")
        for module in context.modules:
            _check_renderable(module, file=True)
        body = "".join(_render_module(module, "    ") + "\n" for module in context.modules)
        blocks.append(f"{context.name} {{\n{body}}};\n")
    text = "\n".join(blocks)
    return "\n" + text if text.startswith("\ufeff") else text  # a leading U+FEFF would be read as a byte-order mark
