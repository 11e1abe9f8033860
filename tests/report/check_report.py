#!/usr/bin/env python3
"""Checks a gspo report's DOM as headless Chromium left it after the page's scripts ran (--dump-dom).

usage: check_report.py DOM.html [--no-charts] [--charts ID,ID,...] [--traces ID=N ...] [--group-rows N] [--runs N]
                       [--note TEXT ...] [--no-element-id ID ...] [--text TEXT ...] [--no-rollouts]
                       [--colour-modes MODE ...]
Prints one line per check and `ok` last; exits 1 on the first failed check."""
import argparse
import html.parser
import sys


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []          # (tag, attrs dict)
        self.stack = []
        self.notes = []             # texts of <li> under #notes
        self.text = []
        self._li = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        in_notes = any(x.get("id") == "notes" for _, x in self.stack)
        void = tag in ("img", "input", "br", "meta", "link", "hr", "path", "rect", "line", "circle", "use", "image")
        if not void:
            self.stack.append((tag, a))
        if tag == "li" and in_notes:
            self._li = []

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if tag == "li" and self._li is not None:
            self.notes.append("".join(self._li))
            self._li = None

    def handle_data(self, data):
        self.text.append(data)
        if self._li is not None:
            self._li.append(data)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def classes(a):
    return (a.get("class") or "").split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dom")
    ap.add_argument("--charts", default="")
    ap.add_argument("--traces", nargs="*", default=[])
    ap.add_argument("--group-rows", type=int, default=0)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--note", nargs="*", default=[])
    ap.add_argument("--no-element-id", nargs="*", default=[])
    ap.add_argument("--text", nargs="*", default=[])
    ap.add_argument("--no-rollouts", action="store_true")
    ap.add_argument("--colour-modes", nargs="*", default=[], help="token colourings that must be offered (enabled)")
    ap.add_argument("--no-charts", action="store_true", help="a run without metrics: no chart, the page still built")
    args = ap.parse_args()
    d = Dom()
    d.feed(open(args.dom, encoding="utf-8", errors="replace").read())
    body = [a for t, a in d.elements if t == "body"]
    if not body or body[0].get("data-ready") != "yes":
        fail("the page script did not finish (body data-ready != yes)")
    charts = {a.get("data-panel"): a for t, a in d.elements if t == "div" and "chart" in classes(a)}
    svgs = sum(1 for t, a in d.elements if "main-svg" in classes(a))
    drawn = [p for p, a in charts.items() if "js-plotly-plot" in classes(a)]
    print(f"charts drawn by plotly: {len(drawn)} ({', '.join(sorted(p for p in drawn if p))}); .main-svg elements: {svgs}")
    if args.no_charts:
        if drawn:
            fail(f"charts drawn for a run without metrics: {drawn}")
    elif svgs < 2 * len(drawn) or not drawn:
        fail("plotly drew no charts")
    for want in filter(None, args.charts.split(",")):
        if want not in drawn:
            fail(f"chart {want} not drawn")
    for spec in args.traces:
        panel, n = spec.split("=")
        got = charts.get(panel, {}).get("data-traces")
        if got != n:
            fail(f"chart {panel}: {got} traces, expected {n}")
        print(f"chart {panel}: {got} traces")
    if args.no_rollouts:
        if not any(a.get("id") == "no-rollouts" for _, a in d.elements):
            fail("no 'no rollouts' message")
    elif args.group_rows:
        group = [a for t, a in d.elements if a.get("id") == "group"]
        cards = [a for t, a in d.elements if "resp" in classes(a)]
        toks = [a for t, a in d.elements if "tok" in classes(a)]
        if not group or group[0].get("data-rows") != str(args.group_rows) or len(cards) != args.group_rows:
            fail(f"rollout browser: group of {group[0].get('data-rows') if group else None} rows, {len(cards)} cards; "
                 f"expected {args.group_rows}")
        titled = [a for a in toks if "logprob" in (a.get("title") or "")]
        if not titled:
            fail("no token coloured by log-prob with its value on hover")
        print(f"rollout browser: group of {len(cards)} responses, {len(toks)} tokens, e.g. '{titled[0]['title']}'")
    for mode in args.colour_modes:
        opts = [a for t, a in d.elements if t == "option" and a.get("value") == mode]
        if not opts or "disabled" in opts[0]:
            fail(f"colour tokens by {mode}: not offered")
        print(f"colour tokens by {mode}: offered")
    for n in args.note:
        if not any(n in x for x in d.notes):
            fail(f"no note containing {n!r}; notes: {d.notes}")
    if args.note:
        print(f"notes shown: {len(d.notes)}")
    for i in args.no_element_id:
        if any(a.get("id") == i for _, a in d.elements):
            fail(f"an element with id {i!r}: text from the run became markup")
    text = "".join(d.text)
    for t in args.text:
        if t not in text:
            fail(f"text {t!r} not shown")
    print("ok")


if __name__ == "__main__":
    main()
