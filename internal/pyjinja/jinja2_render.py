#!/usr/bin/env python3
"""Reference renderer for package render's corpus test.

Reads ONE JSON request from stdin and writes ONE JSON response to stdout.
The request renders the same messages and options through many templates:

    {
      "templates": [{"name": "x.jinja", "source": "..."}, ...],
      "messages": [{"role": "system", "content": "..."}, ...],
      "add_generation_prompt": true,
      "bos_token": "<s>", "eos_token": "</s>",
      "special_tokens": {"unk_token": "<unk>"},       # optional
      "kwargs": {"enable_thinking": false},            # chat_template_kwargs
      "now": "2026-01-02T03:04:05",                    # naive wall clock
      "omit_tools": false                              # optional, see below
    }

"omit_tools": true leaves the tools and documents variables undefined instead
of passing None as transformers does; the corpus test uses it to exercise the
tool-use templates, which raise on None.

Instead of the single case at the top level, a request may hold
"cases": [{"messages": ..., "add_generation_prompt": ..., ...}, ...]; the
response is then {"cases": [{"results": [...]}, ...]}, one entry per case.
A case may carry its own "templates", used instead of the top-level ones.

The response is

    {"results": [{"name": "x.jinja", "output": "...", "error": null,
                  "error_type": null}, ...]}

with "output" null and "error"/"error_type" set when compiling or rendering
raised.

Jinja2 is configured exactly as Hugging Face transformers does in
transformers/utils/chat_template_utils.py (_compile_jinja_template and
render_jinja_template): an ImmutableSandboxedEnvironment with
trim_blocks=True, lstrip_blocks=True, the loopcontrols extension and the
AssistantTracker extension (the {% generation %} tag), the tojson filter
replaced by json.dumps(ensure_ascii=False, ...), and the raise_exception and
strftime_now globals. The one deliberate difference: strftime_now formats a
fixed datetime (the request's "now") instead of datetime.now(), so that the
output is reproducible and comparable with the Go renderer's Options.Now.
"""

import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(Extension):
    """The {% generation %} tag of transformers, without the mask tracking.

    transformers' AssistantTracker renders the body unchanged and only
    records character offsets when return_assistant_tokens_mask is set,
    which never affects the rendered text.
    """

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(
            self.call_method("_generation_support"), [], [], body
        ).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


# The instant strftime_now formats; set per case before rendering.
_NOW = [datetime(2026, 1, 2, 3, 4, 5)]
_COMPILED = {}


def compile_template(source):
    """Compile source once, memoizing the template or its exception."""
    if source not in _COMPILED:
        try:
            _COMPILED[source] = (_compile(source), None)
        except Exception as exc:  # noqa: BLE001
            _COMPILED[source] = (None, exc)
    compiled, exc = _COMPILED[source]
    if exc is not None:
        raise exc
    return compiled


def _compile(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(
            x,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    def strftime_now(format):
        return _NOW[0].strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[AssistantTracker, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def render_case(templates, case):
    now = datetime.fromisoformat(case.get("now") or "2026-01-02T03:04:05")
    # transformers passes a naive local datetime; keep it naive.
    _NOW[0] = now.replace(tzinfo=None)

    variables = {}
    variables.update(case.get("special_tokens") or {})
    variables["bos_token"] = case.get("bos_token", "")
    variables["eos_token"] = case.get("eos_token", "")
    variables.update(case.get("kwargs") or {})

    results = []
    for tpl in templates:
        res = {"name": tpl["name"], "output": None, "error": None, "error_type": None}
        try:
            compiled = compile_template(tpl["source"])
            messages = json.loads(json.dumps(case["messages"]))
            context = {"messages": messages}
            if not case.get("omit_tools"):
                # transformers always passes these two, None when absent.
                context["tools"] = None
                context["documents"] = None
            context["add_generation_prompt"] = bool(case.get("add_generation_prompt"))
            res["output"] = compiled.render(**context, **variables)
        except Exception as exc:  # noqa: BLE001 - report every failure
            res["output"] = None
            res["error"] = str(exc)
            res["error_type"] = type(exc).__name__
        results.append(res)
    return results


def main():
    req = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    if "cases" in req:
        resp = {
            "cases": [
                {"results": render_case(c.get("templates") or req["templates"], c)}
                for c in req["cases"]
            ]
        }
    else:
        resp = {"results": render_case(req["templates"], req)}
    # surrogatepass: a template may build a lone surrogate from an escape.
    out = json.dumps(resp, ensure_ascii=False) + "\n"
    sys.stdout.buffer.write(out.encode("utf-8", "surrogatepass"))


if __name__ == "__main__":
    main()
