#!/usr/bin/env python3
"""Fails when an include runs back up the layer order.

The order is the table in docs/architecture.md (one row per layer, first column `name`): a file under src/gspo/LAYER/
may include headers of LAYER and of the layers listed before it, never of those after it. Every folder under
src/gspo/ must be a listed layer, so a new folder cannot slip past the check.

A layer may hold rooms (subfolders) in an order of their own: the table's rows `LAYER/ROOM/`, in order. A file in a
room may include headers of its layer's earlier rooms and its own, never of a later room nor of the layer's own top
level (which comes after every room); every subfolder of a layer must be a listed room.

No include cycle between files under src/gspo/ either. A file and its header are one unit (sampler.h with sampler.cpp),
and so is a header that completes a class of another (the pimpl idiom: policy_impl.h defines `struct Policy::Impl`,
so it is part of policy.h's unit); a cycle is a unit reaching itself through the includes of its files (a.cpp
includes b.h, b.h or b.cpp includes a.h), printed with the chain of includes.

usage: check_layers.py SOURCE_DIR        exit 0 when the order holds; 1 with each offending include listed."""
import pathlib
import re
import sys


def layer_order(doc):
    order = []
    for line in doc.read_text().splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|", line)
        if m:
            order.append(m.group(1))
    return order


def room_order(doc):
    rooms = {}
    for line in doc.read_text().splitlines():
        m = re.match(r"\|\s*`(\w+)/(\w+)/`\s*\|", line)
        if m:
            rooms.setdefault(m.group(1), []).append(m.group(2))
    return rooms


def room_of(layer_dir, path):
    """The room of a file under layer_dir (None: the layer's top level)."""
    parts = path.relative_to(layer_dir).parts
    return parts[0] if len(parts) > 1 else None


def include_graph(src):
    """The units of src/gspo (a file's path without its extension; a header completing another unit's class joins it)
    and, per unit, the units its files include with where: {unit: {used: (file, line)}}."""
    files = sorted(f for f in src.rglob("*") if f.suffix in (".h", ".cpp"))
    unit = {f: f.relative_to(src).with_suffix("").as_posix() for f in files}
    includes = {}  # file -> [(header unit, line)]
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"gspo/([\w/]+)\.h"', line)
            if m:
                includes.setdefault(f, []).append((m.group(1), n))
    by_unit = {}
    for f in files:
        by_unit.setdefault(unit[f], []).append(f)
    for f in files:  # `struct Owner::Nested {` in a header: the header belongs to the unit declaring Owner
        if f.suffix != ".h":
            continue
        for owner in re.findall(r"^(?:struct|class)\s+(\w+)::\w+\s*(?:final\s*)?[{:]", f.read_text(), re.M):
            for used, _ in includes.get(f, []):
                header = src / (used + ".h")
                if header.exists() and re.search(rf"^\s*(?:struct|class)\s+{owner}\b(?!\s*;)", header.read_text(), re.M):
                    unit[f] = used
    graph = {}
    for f in files:
        for used, n in includes.get(f, []):
            if used in by_unit and unit[f] != used:
                graph.setdefault(unit[f], {}).setdefault(used, (f, n))
    return graph


def include_cycles(src, root):
    """One line per cycle of units (each strongly connected set once): the chain of includes that closes it."""
    graph = include_graph(src)
    index, low, stack, on, sets = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                sets.append(set(members))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    lines = []
    for members in sets:
        start = min(members)
        path, seen = [start], {start: None}  # breadth-first within the set: the shortest way back to `start`
        queue, back = [start], None
        while queue and back is None:
            v = queue.pop(0)
            for w in sorted(graph.get(v, {})):
                if w == start:
                    back = v
                    break
                if w in members and w not in seen:
                    seen[w] = v
                    queue.append(w)
        chain, v = [start], back
        while v is not None and v != start:
            chain.insert(1, v)
            v = seen[v]
        chain.append(start)
        hops = []
        for a, b in zip(chain, chain[1:]):
            f, n = graph[a][b]
            hops.append(f"{f.relative_to(root)}:{n} includes {b}.h")
        lines.append(" -> ".join(hops))
    return sorted(lines)


def main():
    root = pathlib.Path(sys.argv[1])
    order = layer_order(root / "docs" / "architecture.md")
    if len(order) < 5:
        print(f"FAIL: found only {order} as layers in docs/architecture.md")
        return 1
    rank = {name: i for i, name in enumerate(order)}
    rooms = room_order(root / "docs" / "architecture.md")
    src = root / "src" / "gspo"
    problems, checked = [], 0
    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        if folder.name not in rank:
            problems.append(f"src/gspo/{folder.name}/ is not a layer of docs/architecture.md")
            continue
        listed = rooms.get(folder.name, [])
        room_rank = {r: i for i, r in enumerate(listed)}
        for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
            if sub.name not in room_rank:
                problems.append(f"src/gspo/{folder.name}/{sub.name}/ is not a room of docs/architecture.md")
        for f in sorted(folder.rglob("*")):
            if f.suffix not in (".h", ".cpp"):
                continue
            room = room_of(folder, f)
            for n, line in enumerate(f.read_text().splitlines(), 1):
                m = re.match(r'\s*#\s*include\s+"gspo/(\w+)/((\w+)/)?', line)
                if not m:
                    continue
                checked += 1
                used = m.group(1)
                if used not in rank:
                    problems.append(f"{f.relative_to(root)}:{n}: includes unknown layer '{used}'")
                elif rank[used] > rank[folder.name]:
                    problems.append(f"{f.relative_to(root)}:{n}: {folder.name} includes {used}, a later layer")
                elif used == folder.name and room is not None:
                    used_room = m.group(3) if m.group(3) in room_rank else None  # None: the layer's top level
                    if used_room is None:
                        problems.append(f"{f.relative_to(root)}:{n}: {folder.name}/{room} includes the top level of "
                                        f"{folder.name}, which comes after its rooms")
                    elif room_rank[used_room] > room_rank.get(room, -1):
                        problems.append(f"{f.relative_to(root)}:{n}: {folder.name}/{room} includes "
                                        f"{folder.name}/{used_room}, a later room")
    cycles = include_cycles(src, root)
    problems += [f"include cycle: {c}" for c in cycles]
    for p in problems:
        print("FAIL", p)
    room_text = "".join(f"; {layer}: {' < '.join(rs)} < its top level" for layer, rs in rooms.items())
    print(f"{checked} includes checked against the layer order {' < '.join(order)}{room_text}: "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
