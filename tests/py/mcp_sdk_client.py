"""Drive `docsnap serve` with the official MCP Python SDK, over stdio and over
Streamable HTTP: tools/list is compared with the seed contracts field by field,
and every tool is called with valid and with invalid arguments.

Usage: mcp_sdk_client.py SEEDS_DIR stdio DOCSNAP ARTIFACTS
       mcp_sdk_client.py SEEDS_DIR http URL
Prints one line per check and `N passed, N failed` at the end; exit 1 on failure.
"""

import asyncio
import json
import re
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

PASSED = 0
FAILED = []


def check(cond, what):
    global PASSED
    if cond:
        PASSED += 1
        print(f"ok   {what}")
    else:
        FAILED.append(what)
        print(f"FAIL {what}")


def json_blocks(text):
    """Top-level JSON objects of a seed file, in order."""
    out, depth, start = [], 0, None
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                out.append(json.loads(text[start : i + 1]))
    return out


def table_rows(text, heading):
    """Rows (name, required) of a markdown table under `heading` in seed 001."""
    part = text.split(heading, 1)[1]
    rows = []
    for line in part.splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("Name", "") or set(cells[0]) <= {"-"}:
            continue
        rows.append((cells[0], cells[1] == "Yes"))
    return rows


def seeds(seed_dir):
    d = Path(seed_dir)
    s000 = json_blocks((d / "000_000f0cbc4671a749.txt").read_text())
    s001 = (d / "001_de8ad4ad58673af4.txt").read_text()
    s003 = json_blocks((d / "003_204719329f4c959f.txt").read_text())
    return {
        "search_docs": (s000[0], s000[1]),
        "read_section": (s000[2], s000[3]),
        "docs_search": (s003[0], s003[1]),
    }, {
        "input": table_rows(s001, "Input Schema"),
        "output": table_rows(s001, "Output Schema"),
    }


def attr(obj, snake, camel):
    """SDK 1.x spells fields in camelCase, 2.x in snake_case."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def structured(res):
    sc = attr(res, "structured_content", "structuredContent")
    text = res.content[0].text if res.content else None
    return sc, text


def is_error(res):
    return bool(attr(res, "is_error", "isError"))


async def exercise(session, seed_dir, label):
    exact, godot_table = seeds(seed_dir)
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    want = {
        "search_docs", "read_section", "search_godot_docs", "fetch_godot_doc",
        "get_godot_class", "get_godot_class_member", "docs_search", "docs_changes",
    }
    check(set(tools) == want, f"{label}: tools/list has the seven seed tools and docs_changes ({sorted(tools)})")
    for name, (inp, out) in exact.items():
        t = tools.get(name)
        check(t is not None and attr(t, 'input_schema', 'inputSchema') == inp, f"{label}: {name} input schema equals the seed")
        check(t is not None and attr(t, 'output_schema', 'outputSchema') == out, f"{label}: {name} output schema equals the seed")
    g = tools.get("search_godot_docs")
    if g:
        gi, go = attr(g, "input_schema", "inputSchema"), attr(g, "output_schema", "outputSchema")
        props_in = gi.get("properties", {})
        req_in = set(gi.get("required", []))
        for field, required in godot_table["input"]:
            check(field in props_in, f"{label}: search_godot_docs input has `{field}`")
            check((field in req_in) == required, f"{label}: search_godot_docs input `{field}` required={required}")
        check(set(props_in) == {f for f, _ in godot_table["input"]}, f"{label}: search_godot_docs input has no extra field")
        props_out = go.get("properties", {})
        req_out = set(go.get("required", []))
        for field, required in godot_table["output"]:
            check(field in props_out, f"{label}: search_godot_docs output has `{field}`")
            check((field in req_out) == required, f"{label}: search_godot_docs output `{field}` required={required}")
        check(set(props_out) == {f for f, _ in godot_table["output"]}, f"{label}: search_godot_docs output has no extra field")
    for name in ("fetch_godot_doc", "get_godot_class", "get_godot_class_member"):
        t = tools.get(name)
        check(t is not None and attr(t, "input_schema", "inputSchema").get("type") == "object"
              and attr(t, "output_schema", "outputSchema") is not None,
              f"{label}: {name} has input and output schemas")

    async def call(name, args):
        return await session.call_tool(name, args)

    async def ok(name, args, pred, what):
        r = await call(name, args)
        sc, text = structured(r)
        good = not is_error(r) and sc is not None and json.loads(text) == sc
        try:
            good = good and pred(sc)
        except Exception as e:  # a failing predicate is a failed check
            print(f"     ({e!r})")
            good = False
        check(good, f"{label}: {name} {what}")
        return sc

    async def bad(name, args, needle, what):
        r = await call(name, args)
        text = r.content[0].text if r.content else ""
        check(is_error(r) and needle in text, f"{label}: {name} rejects {what} ({text[:90]!r})")

    # Agent docs
    sc = await ok("search_docs", {"query": "PreToolUse hook exit code 2 blocks the tool call", "product": "claude-code", "limit": 3},
                  lambda s: 0 < len(s["passages"]) <= 3 and all(0 <= p["score"] <= 1 for p in s["passages"]), "valid query")
    url = sc["passages"][0]["url"] if sc and sc.get("passages") else "https://code.claude.com/docs/en/hooks"
    await ok("search_docs", {"query": "sampling", "response_format": "detailed", "limit": 1},
             lambda s: len(s["passages"]) == 1, "detailed")
    await bad("search_docs", {"query": ""}, "query", "an empty query")
    await bad("search_docs", {"query": "x", "limit": 21}, "limit", "limit 21")
    await bad("search_docs", {"query": "x", "product": "vim"}, "product", "an unknown product")
    await bad("search_docs", {"query": "x", "response_format": "long"}, "response_format", "a bad response_format")
    page = url.split("#")[0]
    await ok("read_section", {"url": page}, lambda s: s["url"] == page and len(s["outline"]) > 0, "outline")
    await bad("read_section", {"url": page, "heading": "no such heading at all xyz"}, "heading", "an unknown heading")
    await bad("read_section", {"url": "https://example.com/nope"}, "search_docs", "an unknown url")
    await bad("read_section", {"url": page, "outline_depth": 4}, "outline_depth", "outline_depth 4")
    await bad("read_section", {}, "url", "a missing url")

    # Godot
    sc = await ok("search_godot_docs", {"query": "add_child", "kind": "class", "limit": 5},
                  lambda s: any(h.get("class_name") == "Node" and h.get("member_name") == "add_child"
                                and h["uri"].endswith("#class-node-method-add-child") for h in s["hits"][:3]),
                  "class member hit")
    await ok("search_godot_docs", {"query": "how do I make a character jump?", "limit": 80},
             lambda s: s["query"] == "make a character jump" and len(s["hits"]) <= 50, "question framing, limit 80 → ≤ 50")
    await bad("search_godot_docs", {"query": "jump", "kind": "recipes"}, "tutorials", "an unknown kind (lists the kinds)")
    await bad("search_godot_docs", {}, "query", "a missing query")
    await ok("fetch_godot_doc", {"uri": "https://docs.godotengine.org/en/stable/classes/class_node.html"},
             lambda s: s["next_offset"] is not None and len(s["text"]) <= 8000, "a long page, paged")
    await ok("fetch_godot_doc", {"uri": "https://docs.godotengine.org/en/stable/classes/class_node.html#class-node-method-add-child"},
             lambda s: "add_child" in s["text"], "one member section")
    await bad("fetch_godot_doc", {"uri": "https://docs.godotengine.org/en/stable/nope.html"}, "uri", "an unknown uri")
    await ok("get_godot_class", {"class_name": "Tween"}, lambda s: len(s["members"]["methods"]) > 10, "Tween")
    await bad("get_godot_class", {"class_name": "Nod2D"}, "Node2D", "an unknown class with a suggestion")
    await ok("get_godot_class_member", {"class_name": "CharacterBody2D", "member_name": "add_child"},
             lambda s: s["defined_in"] == "Node" and "add_child(" in s["signature"], "an inherited member")
    await bad("get_godot_class_member", {"class_name": "Node", "member_name": "add_chld"}, "add_child", "an unknown member with a suggestion")

    # No result exceeds 25,000 tokens (about 100 KB), whatever the arguments.
    for name, args in [
        ("search_docs", {"query": "configure settings permissions hooks mcp servers", "limit": 20, "response_format": "detailed"}),
        ("search_godot_docs", {"query": "node", "limit": 50}),
        ("get_godot_class", {"class_name": "@GlobalScope"}),
        ("get_godot_class", {"class_name": "Node"}),
        ("fetch_godot_doc", {"uri": "https://docs.godotengine.org/en/stable/classes/class_@globalscope.html"}),
        ("docs_search", {"query": "dashboard", "limit": 25}),
        ("docs_changes", {"product": "leapview", "since": "3.1", "limit": 1000}),
    ]:
        r = await call(name, args)
        size = sum(len(c.text) for c in r.content if hasattr(c, "text"))
        check(not is_error(r) and size < 100_000, f"{label}: {name} {args} stays under 100 KB ({size} chars)")

    # LeapView
    sc = await ok("docs_search", {"query": "publish", "limit": 2},
                  lambda s: s["count"] == 2 and s["hasMore"] and "nextCursor" in s, "first page")
    if sc and sc.get("nextCursor"):
        await ok("docs_search", {"query": "publish", "limit": 2, "cursor": sc["nextCursor"]},
                 lambda s2: s2["count"] >= 1 and s2["matches"][0]["id"] not in {m["id"] for m in sc["matches"]}, "next page with the cursor")
        await bad("docs_search", {"query": "dashboard", "cursor": sc["nextCursor"]}, "cursor", "a cursor for another query")
        await bad("docs_search", {"query": "publish", "cursor": sc["nextCursor"][:-2] + "zz"}, "cursor", "an altered cursor")
    await ok("docs_search", {"query": "publish", "path": "cli"},
             lambda s: all(m["path"].startswith("cli") for m in s["matches"]), "path prefix")
    await bad("docs_search", {"query": "x", "limit": 26}, "limit", "limit 26")
    await bad("docs_search", {"query": "x", "colour": "red"}, "colour", "an unknown field")

    # What changed (beyond the seeds): LeapView 3.1 → 3.2, its result checked
    # against the output schema by the SDK.
    await ok("docs_changes", {"product": "leapview", "since": "3.1"},
             lambda s: s["to"]["version"] == "3.2" and s["counts"]["added"] > 0
             and s["changed"][0]["sections"][0]["excerpt"] != "", "3.1 → 3.2")
    await ok("docs_changes", {"product": "leapview", "since": "3.1", "path": "cli", "limit": 1},
             lambda s: all("/cli/" in p["url"] for p in s["added"] + s["removed"]) and len(s["added"]) <= 1,
             "path and limit")
    await bad("docs_changes", {"product": "leapview", "since": "yesterday"}, "since", "an unknown since")
    await bad("docs_changes", {"product": "vim", "since": "3.1"}, "product", "an unknown product")


async def main():
    seed_dir, mode = sys.argv[1], sys.argv[2]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[3], args=["serve", "--stdio", "--artifacts", sys.argv[4]])
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await exercise(s, seed_dir, "stdio")
    else:
        async with streamable_http_client(sys.argv[3]) as streams:
            r, w = streams[0], streams[1]
            async with ClientSession(r, w) as s:
                await exercise(s, seed_dir, "http")
    print(f"{PASSED} passed, {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


asyncio.run(main())
