"""HTTP fuzzing of the API's OpenAPI schema with schemathesis: no request may get a 5xx.

    python -m benchmarks.robustness.fuzz_http [--examples 200] [--seconds 0] [--seed 0]

``data/sample/docs`` (one document given ``access: ["hr"]``) is indexed with the hash
embedder (``hash:64``, fast, no model) into a temporary folder, and the real app
(:func:`proxy_pointer.serve.http.create_app` under uvicorn, on a free 127.0.0.1 port, in a thread
of this process) serves it with every feature on: an update token (``POST /index``, inline
documents and server-side ``paths`` under ``--docs-root``), a reader token for the ``hr``
group, and an in-process LLM for ``/ask`` that cites the first section it is given (so
``/ask`` runs synthesis rather than answering 503). The schema is read from the running
server's ``/openapi.json``.

Every operation gets ``--examples`` cases, positive (schema-valid) and negative
(schema-violating) alike, from schemathesis's generators driven by Hypothesis. Positive cases
are steered towards the index some of the time, so that they get past "not found": a real
doc id in place of a generated one (path parameters, ``doc_ids``, the document part of a
ref), ref tails built from real node ids and line and page ranges (``L0``, ``L5-2``,
``p99999999999999999999``), and the reader's or the update token in place of a generated
bearer. The read operations run once on the index as built, then ``POST /index`` (inline
documents with fuzzed ids, texts and metadata; paths; ``prune``), then the read operations
once more over whatever the writes left.

Checks on every response: ``not_a_server_error`` (no 5xx), ``status_code_conformance``
(every status is declared), ``content_type_conformance``, ``response_schema_conformance``,
``response_headers_conformance`` and ``negative_data_rejection`` (a schema-violating request
gets a 4xx), plus, as advice only, ``positive_data_acceptance`` (a schema-valid request can
still be refused with 400 when it is wrong in ways a JSON schema cannot say: a malformed
ref, an empty metadata key). Unhandled exceptions the server logged are counted too.

Writes ``benchmarks/results/fuzz_http/fuzz-http.{json,md}`` (``--out``); exits 1 when any response
was a 5xx, the server logged an unhandled exception, or a check other than the advisory one
failed, so CI can run a short version (``--examples 20``).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

from ..common import RESULTS, ROOT, environment, write_report

SAMPLE = ROOT / "data" / "sample" / "docs"
#: Checks whose failures fail the run.
STRICT = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "response_headers_conformance",
          "negative_data_rejection")
#: Reported, never failing the run: a 400 for a request the schema cannot call wrong.
ADVISORY = ("positive_data_acceptance",)
#: Failure samples kept per operation and check.
SAMPLES = 3


def _cite_first_line(prompt: str) -> str:
    """A reply for ``/ask`` that cites the first line of the first section given."""
    m = re.search(r'<section id="([^"]+)" lines="(\d+)-\d+"', prompt)
    return (f"The sections say so [{m.group(1)}, line {m.group(2)}]." if m
            else "The answer is not in the sections.")


class ServerErrors(logging.Handler):
    """Counts records with a traceback from the app's and uvicorn's loggers."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(self.format(record)[-2_000:])


def build_site(work: Path) -> Path:
    """``work/docs`` (the sample, one paper readable by ``hr`` only) indexed into
    ``work/idx``; returns the docs folder."""
    from proxy_pointer.embeddings import HashEmbedder
    from proxy_pointer.index import update_directory

    docs = work / "docs"
    shutil.copytree(SAMPLE, docs)
    first = sorted(p.name for p in docs.glob("*.md"))[0]
    update_directory(work / "idx", [docs], embedder=HashEmbedder(64),
                     metadata={first: {"access": ["hr"], "year": 2019}})
    return docs


def serve(app: Any) -> tuple[Any, threading.Thread, str]:
    """``app`` under uvicorn on a free 127.0.0.1 port, in a daemon thread."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        raise SystemExit("the server did not start")
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


def _clip(value: Any, n: int = 600) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= n else text[:n] + f"... ({len(text)} chars)"


class Fuzzer:
    """Runs schemathesis cases against ``base`` and records what came back."""

    def __init__(self, base: str, *, examples: int, seconds: float, seed: int,
                 admin: str, reader: str) -> None:
        import schemathesis
        from schemathesis import checks

        self.base, self.examples, self.seconds, self.seed = base, examples, seconds, seed
        self.admin, self.reader = admin, reader
        self.files = sorted(p.name for p in SAMPLE.iterdir())  # under --docs-root
        self.schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
        self.checks = {name: getattr(checks, name) for name in (*STRICT, *ADVISORY)}

    def live(self) -> dict[str, Any]:
        """Doc ids, their node ids and breadcrumbs as the update token sees them now."""
        import httpx

        auth = {"Authorization": f"Bearer {self.admin}"}
        with httpx.Client(base_url=self.base, headers=auth, timeout=60) as http:
            ids = [d["doc_id"] for d in http.get("/documents").json()["documents"]]
            nodes = []
            for d in ids[:20]:
                r = http.get(f"/documents/{d}/tree")
                if r.status_code == 200:
                    nodes += [n["node_id"] for n in r.json()["nodes"]]
        return {"doc_ids": ids, "node_ids": sorted(set(nodes))}

    def steer(self, live: dict[str, Any], operation_path: str) -> Any:
        """A strategy of functions that move a positive case towards the index."""
        from hypothesis import strategies as st

        ids = live["doc_ids"] or ["none.md"]
        node = st.sampled_from(live["node_ids"] or ["0001"])
        small = st.integers(0, 400)
        number = st.one_of(st.integers(-3, 400), st.integers(min_value=10**15),
                           st.just(10**30))
        tail = st.one_of(
            node, node, node, st.builds(lambda a, b: f"L{a}-{b}", small, small),
            st.builds(lambda a, b: f"L{a}-{b}", number, number),
            st.builds(lambda a: f"L{a}", number),
            st.builds(lambda a, b: f"p{a}-{b}", number, number),
            st.builds(lambda a: f"p{a}", number),
            st.sampled_from(["preamble", "", "L", "L1-", "Lx", "p", "0000", "9999"]),
            st.text(max_size=12))
        auth = st.sampled_from([None, self.admin, self.reader, "wrong-token"])
        if operation_path == "/index":  # mostly the update token: writes get past 401
            auth = st.sampled_from([self.admin] * 9 + ["wrong-token"])
        return st.fixed_dictionaries({
            "doc_id": st.one_of(st.none(), st.sampled_from(ids),
                                st.sampled_from(ids).map(lambda d: d.removesuffix(".md"))),
            "tail": tail, "auth": auth,
            "doc_ids": st.one_of(st.none(), st.lists(st.sampled_from(ids), max_size=3)),
            "ids": st.booleans(),  # inline documents under well-formed ids
            "paths": st.one_of(st.none(), st.lists(st.sampled_from(
                [*self.files, ".", "", "missing.md", "../outside"]), max_size=3)),
        })

    def run(self, operation: Any, label: str) -> dict[str, Any]:
        from hypothesis import HealthCheck, Phase, given, seed, settings
        from hypothesis import strategies as st
        from schemathesis import GenerationMode

        live = self.live()
        positive = operation.as_strategy(GenerationMode.POSITIVE)
        # Two positive cases to a negative one: negative ones mostly test the validation.
        strategy = st.one_of(positive, positive,
                             operation.as_strategy(GenerationMode.NEGATIVE))
        statuses: Counter[int] = Counter()
        modes: Counter[str] = Counter()
        failures: dict[str, dict[str, Any]] = {}
        out: dict[str, Any] = {"operation": label, "examples": 0}
        t0 = time.monotonic()
        budget = self.seconds

        def one(case: Any, change: dict[str, Any]) -> None:
            if budget and time.monotonic() - t0 > budget:
                return
            components = case.meta.components if case.meta else {}
            invalid = {str(where.value) for where, c in components.items()
                       if c.mode != GenerationMode.POSITIVE}
            self._apply(case, change, operation, invalid)
            modes["negative" if invalid else "positive"] += 1
            out["examples"] += 1
            try:
                response = case.call(base_url=self.base, timeout=120)
            except Exception as e:  # a dropped connection is as bad as a 500
                statuses[-1] += 1
                failures.setdefault("transport_error", {"count": 0, "samples": []})
                entry = failures["transport_error"]
                entry["count"] += 1
                if len(entry["samples"]) < SAMPLES:
                    entry["samples"].append({"request": _clip(case.as_curl_command(
                        base_url=self.base)), "error": _clip(repr(e))})
                return
            statuses[response.status_code] += 1
            for name, check in self.checks.items():
                try:
                    case.validate_response(response, checks=[check])
                except BaseException as e:  # schemathesis's FailureGroup
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    entry = failures.setdefault(name, {"count": 0, "samples": []})
                    entry["count"] += 1
                    titles = {s["title"] for s in entry["samples"]}
                    title = "; ".join(sorted({getattr(f, "title", type(f).__name__)
                                              for f in getattr(e, "exceptions", [e])}))
                    if len(entry["samples"]) < SAMPLES and title not in titles:
                        entry["samples"].append({
                            "title": title, "status": response.status_code,
                            "request": _clip(case.as_curl_command(base_url=self.base)),
                            "response": _clip(response.text, 400)})

        @seed(self.seed + zlib.crc32(label.encode()))
        @settings(max_examples=self.examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.explicit,
                                                                   Phase.generate],
                  print_blob=False)
        @given(case=strategy, change=self.steer(live, operation.path))
        def fuzz(case: Any, change: dict[str, Any]) -> None:
            one(case, change)

        fuzz()
        out.update({
            "seconds": round(time.monotonic() - t0, 1), "cases": dict(modes),
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "server_errors": sum(v for k, v in statuses.items() if k >= 500 or k < 0),
            "failures": failures})
        return out

    def _apply(self, case: Any, change: dict[str, Any], operation: Any,
               invalid: set[str]) -> None:
        """Steer the schema-valid parts of a case (``invalid``: its parts generated to
        violate the schema, left alone): real ids, ref tails, files under the documents
        folder and a valid token, each some of the time (the part stays schema-valid: these
        are all strings)."""
        doc = change["doc_id"]
        params = case.path_parameters or {}
        if doc is not None and "doc_id" in params and "path" not in invalid:
            params["doc_id"] = doc
            if "node_id" in params:
                params["node_id"] = change["tail"] or "0001"
        query = case.query or {}
        if doc is not None and isinstance(query.get("ref"), str) and "query" not in invalid:
            query["ref"] = f"{doc}#{change['tail']}"
        body = case.body
        if isinstance(body, dict) and "body" not in invalid:
            if change["doc_ids"] is not None and "question" in body:
                body["doc_ids"] = change["doc_ids"]
            if change["paths"] is not None and "paths" in body:
                body["paths"] = change["paths"]
            documents = body.get("documents")
            if change["ids"] and isinstance(documents, list):
                for i, d in enumerate(documents):
                    if isinstance(d, dict) and "doc_id" in d:
                        d["doc_id"] = f"fuzz/{i}.md"
        if "header" in invalid:
            return  # the header is the schema-violating part: leave it so
        if case.headers is None:
            case.headers = {}
        headers = case.headers
        token = change["auth"]
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        elif "Authorization" in headers and change["doc_id"] is None:
            del headers["Authorization"]  # anonymous


def table(report: dict[str, Any]) -> list[str]:
    total = report["totals"]
    lines = [
        f"# HTTP fuzzing (schemathesis {report['schemathesis']}): {total['examples']} "
        f"requests, {total['server_errors']} server errors",
        "",
        f"{report['examples_per_operation']} examples per operation (positive and negative, "
        "seed " f"{report['seed']}), read operations before and after the `POST /index` "
        "writes; a `proxy_pointer.serve.http` app under uvicorn on 127.0.0.1 with an update token, "
        "a reader token, `--docs-root` and an in-process citing LLM. Strict checks: "
        + ", ".join(f"`{c}`" for c in STRICT) + "; advisory: "
        + ", ".join(f"`{c}`" for c in ADVISORY) + ".",
        "",
        "| pass | operation | examples | statuses | 5xx | strict failures | advisory |",
        "|---|---|---|---|---|---|---|",
    ]
    for op in report["operations"]:
        fails = op["failures"]
        strict = ", ".join(f"{k}: {v['count']}" for k, v in fails.items()
                           if k not in ADVISORY) or "0"
        advice = ", ".join(f"{k}: {v['count']}" for k, v in fails.items()
                           if k in ADVISORY) or "0"
        statuses = " ".join(f"{k}×{v}" for k, v in op["statuses"].items())
        lines.append(f"| {op['pass']} | `{op['operation']}` | {op['examples']} | {statuses} | "
                     f"{op['server_errors']} | {strict} | {advice} |")
    lines += ["", f"Unhandled exceptions logged by the server: "
              f"{total['unhandled_exceptions']}. Wall time {report['seconds']} s on "
              f"{report['environment']['cpus']} CPUs.", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=200, help="cases per operation and pass")
    ap.add_argument("--seconds", type=float, default=0.0,
                    help="time bound per operation and pass (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS / "fuzz_http" / "fuzz-http"),
                    help="output path without suffix: writes OUT.json and OUT.md")
    args = ap.parse_args(argv)

    import schemathesis

    from proxy_pointer.access import Access
    from proxy_pointer.llm import ScriptedLLM
    from proxy_pointer.serve.http import create_app
    from proxy_pointer.serve.service import Service

    errors = ServerErrors()
    for name in ("proxy_pointer", "uvicorn.error", "uvicorn.asgi"):
        logging.getLogger(name).addHandler(errors)
    logging.getLogger("proxy_pointer.serve.http").setLevel(logging.ERROR)  # the 502 warnings
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="fuzz-http-"))
    admin, reader = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    try:
        docs = build_site(work)
        llm = ScriptedLLM(_cite_first_line, model_id="fuzz-citing")
        service = Service(work / "idx", llm=llm)
        app = create_app(service, token=admin, docs_root=docs,
                         tokens={reader: Access(frozenset({"hr"}))})
        server, thread, base = serve(app)
        try:
            fuzzer = Fuzzer(base, examples=args.examples, seconds=args.seconds,
                            seed=args.seed, admin=admin, reader=reader)
            ops = [r.ok() for r in fuzzer.schema.get_all_operations()]
            reads = [o for o in ops if o.method.upper() == "GET" or o.path != "/index"]
            writes = [o for o in ops if o not in reads]
            results = []
            for pass_name, group in (("before writes", reads), ("writes", writes),
                                     ("after writes", reads)):
                for op in group:
                    label = f"{op.method.upper()} {op.path}"
                    print(f"{pass_name}: {label}", file=sys.stderr, flush=True)
                    result = fuzzer.run(op, label)
                    result["pass"] = pass_name
                    results.append(result)
                    print(f"  {result['examples']} examples, statuses {result['statuses']}, "
                          f"failures { {k: v['count'] for k, v in result['failures'].items()} }",
                          file=sys.stderr, flush=True)
        finally:
            server.should_exit = True
            thread.join(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    totals = {
        "operations": len({r["operation"] for r in results}),
        "examples": sum(r["examples"] for r in results),
        "server_errors": sum(r["server_errors"] for r in results),
        "strict_failures": sum(v["count"] for r in results for k, v in r["failures"].items()
                               if k not in ADVISORY),
        "advisory_failures": sum(v["count"] for r in results
                                 for k, v in r["failures"].items() if k in ADVISORY),
        "unhandled_exceptions": len(errors.records),
    }
    report = {
        "tool": "schemathesis", "schemathesis": schemathesis.SCHEMATHESIS_VERSION,
        "examples_per_operation": args.examples, "seconds_per_operation": args.seconds,
        "seed": args.seed, "checks": {"strict": list(STRICT), "advisory": list(ADVISORY)},
        "totals": totals, "operations": results,
        "unhandled_exception_logs": errors.records[:10],
        "seconds": round(time.monotonic() - t0, 1),
        "environment": environment("fastapi", "uvicorn", "schemathesis", "hypothesis"),
    }
    out = Path(args.out)
    write_report(out.parent, out.name, report, table(report))
    print(json.dumps(totals), file=sys.stderr)
    failed = totals["server_errors"] or totals["unhandled_exceptions"] or totals[
        "strict_failures"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
