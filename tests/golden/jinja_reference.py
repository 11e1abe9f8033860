"""Golden renders for gspo's Jinja interpreter (src/gspo/tokenizer/jinja.h), made by transformers itself.

Every template in tests/data/chat_templates/ is rendered for each conversation below through transformers'
render_jinja_template (the function apply_chat_template calls), so the environment (trim_blocks, lstrip_blocks,
loopcontrols, the sandbox, tojson, raise_exception, strftime_now, namespace, dict), the variables it passes and the
aliasing of reasoning fields are transformers' own, not a copy. strftime_now reads a clock fixed at 2026-01-15 so the
output does not depend on the day; the C++ test sets the same time. A render that raises (a template that refuses a
system message, say) is recorded with its error message: the C++ side must raise with the same message.

Small templates ("snippets") exercise single features (filters, tests, slicing, loop variables) through the same
environment with a plain context.

Usage: jinja_reference.py OUT.json
"""
import datetime as _dt
import json
import sys
from pathlib import Path

import jinja2
import transformers.utils.chat_template_utils as ctu

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE.parent / "data" / "chat_templates"
FIXED_NOW = _dt.datetime(2026, 1, 15, 9, 30, 0)


class _FixedClock(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedClock  # strftime_now calls datetime.now() through the module's name

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "user_only": [{"role": "user", "content": "What is 2 + 2?"}],
    "system_two_turns": [
        {"role": "system", "content": "You are a careful math tutor."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "2 + 2 = 4."},
        {"role": "user", "content": "  And 3 * 3?  "},
    ],
    "think_in_content": [
        {"role": "user", "content": "Is 7 prime?"},
        {"role": "assistant", "content": "<think>\n7 has no divisors but 1 and 7.\n</think>\n\nYes, 7 is prime."},
        {"role": "user", "content": "And 9?"},
    ],
    "reasoning_field": [
        {"role": "user", "content": "Is 7 prime?"},
        {"role": "assistant", "content": "Yes.", "reasoning_content": "Check 2, 3: neither divides 7."},
    ],
    "unicode_quotes": [
        {"role": "system", "content": "Réponds en français. Use \"quotes\" and 'apostrophes' \\ backslash."},
        {"role": "user", "content": "Ça va? 日本語 ✓\nSecond line\ttab"},
        {"role": "assistant", "content": "Très bien — merci!"},
    ],
    "tool_call": [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "abc123XYZ",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
                }
            ],
        },
        {"role": "tool", "content": "{\"temperature\": 18, \"sky\": \"clear\"}", "name": "get_weather",
         "tool_call_id": "abc123XYZ"},
        {"role": "assistant", "content": "It is 18 °C and clear in Paris."},
        {"role": "user", "content": "Thanks!"},
    ],
}

TOKENS = {
    "meta-llama": ("<|begin_of_text|>", "<|eot_id|>"),
    "google-gemma": ("<bos>", "<eos>"),
    "deepseek": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "Qwen": ("", "<|im_end|>"),
}

SNIPPETS = [
    ("literals", "{{ 1 }}|{{ 2.5 }}|{{ -3 }}|{{ 'a\\'b' }}|{{ \"c\\nd\" }}|{{ true }}|{{ none }}|{{ [1, 'x'] }}|{{ {'k': 1} }}", {}),
    ("arith", "{{ 7 // 2 }} {{ 7 / 2 }} {{ 7 % 3 }} {{ 2 * 3 + 1 }} {{ 'ab' * 2 }} {{ 1 + 2.0 }} {{ -7 // 2 }} {{ 10 / 4 * 2 }}", {}),
    ("concat", "{{ 'a' ~ 1 ~ none }}{{ 'x' + 'y' }}", {}),
    ("compare", "{{ 1 < 2 }}{{ 'a' == 'a' }}{{ 1 != 1 }}{{ 2 >= 3 }}{{ 1 == 1.0 }}{{ [1] == [1] }}", {}),
    ("logic", "{{ not x }}{{ x or 'd' }}{{ x and 'y' }}{{ 'a' in 'cat' }}{{ 3 not in [1, 2] }}{{ 'k' in {'k': 1} }}", {"x": ""}),
    ("ternary", "{{ 'y' if a else 'n' }}{{ 'y' if b }}|{{ 'q' if b else 'r' if a else 's' }}", {"a": 1, "b": 0}),
    ("slicing", "{{ xs[1:] }}{{ xs[::-1] }}{{ xs[:-1] }}{{ s[1:3] }}{{ s[::-1] }}{{ xs[-1] }}{{ xs[0:5:2] }}", {"xs": [1, 2, 3, 4], "s": "hello"}),
    ("attr_item", "{{ m.role }}{{ m['content'] }}{{ m.missing is defined }}{{ m.get('role') }}{{ m.get('zz', 'dflt') }}{{ m.get('zz') }}", {"m": {"role": "user", "content": "hi"}}),
    ("loop_vars", "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}", {"xs": ["a", "b", "c"]}),
    ("loop_else_filter", "{% for x in xs if x > 1 %}{{ x }}{{ loop.last }}{% else %}empty{% endfor %}|{% for x in [] %}y{% else %}none{% endfor %}", {"xs": [1, 2, 3]}),
    ("loop_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("loopcontrols", "{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {"xs": [1, 2, 3, 4, 5]}),
    ("namespace", "{% set ns = namespace(n=0, s='') %}{% for x in xs %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}", {"xs": [1, 2, 3]}),
    ("set_scope", "{% set a = 1 %}{% for x in xs %}{% set a = x %}{% endfor %}{{ a }}", {"xs": [5, 6]}),
    ("tests", "{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}{{ d is mapping }}{{ xs is iterable }}{{ s is iterable }}{{ 3 is number }}{{ s is number }}{{ t is true }}{{ t is false }}{{ 4 is even }}{{ xs is sequence }}{{ d is string }}", {"x": 1, "n": None, "s": "a", "d": {}, "xs": [1], "t": True}),
    ("filters_str", "{{ '  a b  ' | trim }}|{{ 'ab' | upper }}{{ 'AB' | lower }}{{ 'hello world' | capitalize }}{{ 'hello world' | title }}{{ 'aXbX' | replace('X', '-') }}{{ 5 | string }}{{ '42' | int + 1 }}{{ '2.5' | float }}", {}),
    ("filters_list", "{{ xs | length }}{{ xs | count }}{{ xs | first }}{{ xs | last }}{{ xs | join(', ') }}{{ xs | join }}{{ d | items | list }}{{ 'ab' | list }}{{ xs | reverse | list }}{{ xs | sort | list }}{{ xs | sum }}{{ xs | max }}{{ xs | min }}{{ d | length }}", {"xs": [3, 1, 2], "d": {"a": 1}}),
    ("filters_default", "{{ y | default('dflt') }}{{ x | default('dflt') }}{{ e | default('dflt', true) }}{{ e | default('dflt') }}|", {"x": "have", "e": ""}),
    ("selectattr", "{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|{{ ms | rejectattr('role', 'equalto', 'user') | list | length }}|{{ ms | map(attribute='role') | list }}|{{ ms | selectattr('tool') | list | length }}", {"ms": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool": 1}, {"role": "user", "content": "c"}]}),
    ("tojson", "{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ 'é\"<' | tojson }}|{{ [] | tojson(indent=4) }}|{{ {} | tojson }}|{{ 1.5 | tojson }}|{{ none | tojson }}", {"v": {"b": [1, {"c": None, "d": True}], "a": "x"}}),
    ("str_methods", "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ t.strip('x') }}|{{ t.lstrip('x') }}|{{ t.rstrip('xy') }}|{{ u.split() }}|{{ u.split(',') }}|{{ u.split(',', 1) }}|{{ s.startswith(' a') }}{{ s.endswith('b') }}|{{ s.upper() }}|{{ u.replace(',', ';') }}|{{ t.startswith(('y', 'x')) }}|{{ u.split(',')[-1] }}|{{ 'a b'.title() }}|{{ u.count(',') }}|{{ u.find('b') }}", {"s": " a b ", "t": "xxhixy", "u": "a,b , c"}),
    ("str_rsplit", "{{ p.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}|{{ p.split('</think>')[-1].lstrip('\\n') }}", {"p": "<think>\nr\n</think>\n\nans"}),
    ("dict_methods", "{% for k in d.keys() %}{{ k }}{% endfor %}{% for v in d.values() %}{{ v }}{% endfor %}{{ d.items() | list }}", {"d": {"b": 1, "a": 2}}),
    ("whitespace", "a  {%- if true -%}  b  {%- endif -%}  c\n{{- ' d ' -}}\n e {# comment #} f\n  {% if true %}\ng\n  {% endif %}\nh", {}),
    ("lstrip_trim", "x\n    {% for i in [1, 2] %}\n    item{{ i }}\n    {% endfor %}\ny\n{% if true %}  z{% endif %}\n", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', punct='?') }} {{ greet(name='C') }}", {}),
    ("raw_output_types", "{{ xs }}{{ d }}{{ 1.0 }}{{ 1e3 }}{{ 3 / 1 }}{{ 'a' ~ 2.50 }}{{ [none, true, 'q'] }}", {"xs": ["a", 'b"c', "d'e"], "d": {"k": [1, None]}}),
    ("string_escape_output", "{{ s }}", {"s": "<b>&amp;\"'</b>"}),
    ("set_block_vars", "{% set x, y = 1, 2 %}{{ x }}{{ y }}{% set t = (1, 2) %}{{ t }}{{ t[1] }}", {}),
    ("filter_chain_args", "{{ ('a' ~ '\\n') | trim | upper }}{{ s | replace('\\n', ' ') | truncate(9) }}{{ xs | join('|') | length }}{{ 'x' | center(5) }}|", {"s": "one\ntwo three four", "xs": ["a", "b"]}),
    ("is_in_loop", "{% for m in ms %}{% if m.role == 'user' and not loop.last %}U{% elif m.role in ['assistant', 'tool'] %}A{% else %}?{% endif %}{% endfor %}", {"ms": [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}, {"role": "user"}]}),
    ("dict_global", "{{ dict(a=1, b='x') | tojson }}{{ range(3) | list }}{{ range(1, 7, 2) | list }}", {}),
    ("unicode_len", "{{ s | length }}{{ s[1] }}{{ s | upper }}{{ s[::-1] }}", {"s": "é日x"}),
]

ERROR_SNIPPETS = [
    ("raise", "a{{ raise_exception('Only user and assistant roles are supported!') }}", {}),
    ("undefined_attr_of_undefined", "{{ nope.attr }}", {}),
    ("call_undefined", "{{ nope() }}", {}),
]


def render_chat(template, case, messages, add_generation_prompt, extra):
    tools = [WEATHER_TOOL] if "tool_calls" in json.dumps(messages) else None
    kwargs = dict(extra)
    out = {"template": template["name"], "case": case, "messages": messages, "tools": tools,
           "add_generation_prompt": add_generation_prompt, "extra": kwargs}
    try:
        rendered, _ = ctu.render_jinja_template(conversations=[messages], tools=tools, chat_template=template["source"],
                                                add_generation_prompt=add_generation_prompt, **kwargs)
        out["text"] = rendered[0]
    except jinja2.exceptions.TemplateError as e:  # raise_exception in the template: the message must match
        out["error"] = str(e)
    except Exception as e:  # a template that cannot handle this input (None is not iterable): any error will do
        out["error"] = f"{type(e).__name__}: {e}"
        out["error_kind"] = "python"
    return out


def render_snippet(name, source, context):
    env = ctu._compile_jinja_template(source)  # transformers' environment; we only render a small source
    out = {"name": name, "source": source, "context": context}
    try:
        out["text"] = env.render(**context)
    except jinja2.exceptions.TemplateError as e:
        out["error"] = str(e)
    except Exception as e:  # e.g. calling an undefined: jinja raises UndefinedError (a TemplateError) or TypeError
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: jinja_reference.py OUT.json")
    chats = []
    for path in sorted(TEMPLATES.glob("*.jinja")):
        template = {"name": path.name, "source": path.read_text(encoding="utf-8")}
        bos, eos = next((v for k, v in TOKENS.items() if path.name.startswith(k)), ("<s>", "</s>"))
        thinking = [None, True, False] if "enable_thinking" in template["source"] else [None]
        for case, messages in CONVERSATIONS.items():
            for agp in (False, True):
                for think in thinking:
                    extra = {"bos_token": bos, "eos_token": eos}
                    if think is not None:
                        extra["enable_thinking"] = think
                    chats.append(render_chat(template, case, messages, agp, extra))
    snippets = [render_snippet(*s) for s in SNIPPETS + ERROR_SNIPPETS]
    now = {"year": FIXED_NOW.year, "month": FIXED_NOW.month, "day": FIXED_NOW.day, "hour": FIXED_NOW.hour,
           "minute": FIXED_NOW.minute, "second": FIXED_NOW.second}
    Path(sys.argv[1]).parent.mkdir(parents=True, exist_ok=True)
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump({"now": now, "chats": chats, "snippets": snippets}, f, ensure_ascii=False, indent=1)
    errors = sum("error" in c for c in chats)
    print(f"{len(chats)} chat renders ({errors} raise), {len(snippets)} snippets -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
