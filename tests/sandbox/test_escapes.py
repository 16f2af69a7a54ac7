"""Every way out of the sandbox we know of, tried, and the refusal itself asserted.

Each attempt catches what Deno throws and returns its text, so the test sees
the refusal (`NotCapable: Requires … access`), not merely a failed run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from toolwire.sandbox import DenoRuntime, RunOutcome

TOKEN = "tw-run-token-0123456789"

ATTEMPT = """\
try {{
  const result = await (async () => {{ {attempt} }})();
  return "NOT REFUSED: " + JSON.stringify(result ?? null);
}} catch (error) {{
  return String(error);
}}
"""


async def attempt(runtime: DenoRuntime, code: str, base_url: str = "") -> str:
    outcome = await runtime.run(
        ATTEMPT.format(attempt=code), stubs="", base_url=base_url, token=TOKEN, check=False
    )
    assert outcome.ok, outcome.error
    assert isinstance(outcome.value, str)
    return outcome.value


def exists(path: Path) -> bool:
    return path.exists()


@pytest.mark.parametrize(
    ("code", "refusal"),
    [
        ('return Deno.readTextFileSync("/etc/passwd");', 'Requires read access to "/etc/passwd"'),
        ('return await Deno.readTextFile("/etc/passwd");', 'Requires read access to "/etc/passwd"'),
        (
            'const fs = await import("node:fs");\nreturn fs.readFileSync("/etc/passwd", "utf8");',
            'Requires read access to "/etc/passwd"',
        ),
        ('return [...Deno.readDirSync("/")];', 'Requires read access to "/"'),
        ('return Deno.readTextFileSync("/proc/self/environ");', "Requires read access"),
        ('return Deno.readTextFileSync("/proc/self/cmdline");', "Requires read access"),
        ('Deno.chdir("/");', 'Requires read access to "/"'),
        ('return Deno.env.get("HOME");', 'Requires env access to "HOME"'),
        ("return Deno.env.toObject();", "Requires env access"),
        ('const p = await import("node:process");\nreturn p.env.PATH;', "Requires env access"),
        (
            'return new Deno.Command("/bin/sh", { args: ["-c", "id"] }).outputSync();',
            'Requires run access to "/bin/sh"',
        ),
        (
            'const cp = await import("node:child_process");\nreturn cp.execFileSync("/bin/id");',
            "NotCapable: Requires",
        ),
        ('Deno.kill(1, "SIGTERM");', "Requires run access"),
        (
            'return Deno.dlopen("/lib/x86_64-linux-gnu/libc.so.6", {});',
            "Requires ffi access",
        ),
        ("return Deno.hostname();", 'Requires sys access to "hostname"'),
        ("return Deno.osRelease();", 'Requires sys access to "osRelease"'),
        (
            'return Deno.listen({ hostname: "127.0.0.1", port: 0 });',
            'Requires net access to "127.0.0.1:0"',
        ),
        ('return await fetch("http://example.com/");', 'Requires net access to "example.com:80"'),
        (
            'return await Deno.connect({ hostname: "1.1.1.1", port: 53 });',
            'Requires net access to "1.1.1.1:53"',
        ),
    ],
)
async def test_refused(runtime: DenoRuntime, code: str, refusal: str) -> None:
    result = await attempt(runtime, code)
    assert "NotCapable" in result, result
    assert refusal in result


@pytest.mark.parametrize("where", ["tmp", "run dir"])
async def test_writing_a_file_is_refused(runtime: DenoRuntime, tmp_path: Path, where: str) -> None:
    if where == "tmp":
        target = json.dumps(str(tmp_path / "escaped.txt"))
    else:
        target = 'new URL("./escaped.txt", import.meta.url)'
    result = await attempt(runtime, f'Deno.writeTextFileSync({target}, "x");')
    assert result.startswith("NotCapable: Requires write access to "), result
    assert "escaped.txt" in result
    assert not exists(tmp_path / "escaped.txt")


async def test_the_run_dir_is_readable_but_holds_only_the_code(runtime: DenoRuntime) -> None:
    result = await attempt(runtime, 'return [...Deno.readDirSync(".")].map((e) => e.name);')
    assert result == 'NOT REFUSED: ["user.ts"]'


async def test_another_port_on_loopback_is_refused(
    runtime: DenoRuntime, http_server: str, other_http_server: int
) -> None:
    allowed = await attempt(runtime, f'return (await fetch("{http_server}/")).status;', http_server)
    assert allowed == "NOT REFUSED: 200"  # the one address it was given
    result = await attempt(
        runtime, f'return await fetch("http://127.0.0.1:{other_http_server}/");', http_server
    )
    assert f'NotCapable: Requires net access to "127.0.0.1:{other_http_server}"' in result
    raw = await attempt(
        runtime,
        f'return await Deno.connect({{ hostname: "127.0.0.1", port: {other_http_server} }});',
        http_server,
    )
    assert f'NotCapable: Requires net access to "127.0.0.1:{other_http_server}"' in raw


async def test_another_name_for_the_allowed_address_is_refused(
    runtime: DenoRuntime, http_server: str
) -> None:
    # Deno matches the host as written: "localhost" is not "127.0.0.1".
    port = http_server.rsplit(":", 1)[1]
    result = await attempt(runtime, f'return await fetch("http://localhost:{port}/");', http_server)
    assert f'NotCapable: Requires net access to "localhost:{port}"' in result


async def test_a_remote_module_is_refused(runtime: DenoRuntime) -> None:
    result = await attempt(runtime, 'return await import("https://deno.land/std/version.ts");')
    assert result.startswith('TypeError: Requires import access to "deno.land:443"'), result
    jsr = await attempt(runtime, 'return await import("jsr:@std/path");')
    assert 'Requires import access to "jsr.io:443"' in jsr
    npm = await attempt(runtime, 'return await import("npm:left-pad");')
    assert "Could not find a matching package for 'npm:left-pad'" in npm


async def test_importing_a_file_outside_the_run_dir_is_refused(
    runtime: DenoRuntime, tmp_path: Path
) -> None:
    module = tmp_path / "outside.ts"
    module.write_text("export const secret = 42;\n")
    result = await attempt(runtime, f'return await import("{module.as_uri()}");')
    assert result == (
        f'TypeError: Requires read access to "{module}", run again with the --allow-read flag'
    )


async def test_workers_are_unavailable(runtime: DenoRuntime) -> None:
    # A worker is a second isolate, outside the heap limit: refused with a message.
    result = await attempt(
        runtime, 'return new Worker("data:text/javascript,1", { type: "module" });'
    )
    assert result == "TypeError: Worker is not available in toolwire's sandbox"
    result = await attempt(runtime, 'globalThis.Worker = class {} as any;\nreturn "replaced";')
    assert "Cannot assign to read only property 'Worker'" in result


async def test_node_worker_threads_hit_the_memory_cap(runtime: DenoRuntime) -> None:
    # node:worker_threads is another way to a second isolate: its start-up
    # reservations exceed the run's RLIMIT_DATA cap, and the run ends there.
    outcome = await runtime.run(
        'const { Worker } = await import("node:worker_threads");\n'
        'new Worker("1", { eval: true });\n'
        "await new Promise((resolve) => setTimeout(resolve, 2000));",
        stubs="",
        base_url="",
        token=TOKEN,
        check=False,
    )
    assert not outcome.ok
    assert outcome.limit_hit == "memory"
    assert "Failed to reserve virtual memory" in outcome.error


async def test_a_permission_request_is_denied_without_a_prompt(runtime: DenoRuntime) -> None:
    result = await attempt(
        runtime,
        'const status = await Deno.permissions.request({ name: "read", path: "/etc" });\n'
        'throw new Error("state: " + status.state);',
    )
    assert result == "Error: state: denied"


async def test_the_token_is_not_in_argv_or_env(runtime: DenoRuntime, base_url: str) -> None:
    outcome = await runtime.run(
        "let env: string;\n"
        "try { env = JSON.stringify(Deno.env.toObject()); } catch (e) { env = String(e); }\n"
        "return { args: Deno.args, env };",
        stubs="",
        base_url=base_url,
        token=TOKEN,
        check=False,
    )
    assert outcome.ok, outcome.error
    value: Any = outcome.value
    assert value["args"] == []
    assert value["env"].startswith("NotCapable: Requires env access")
    assert TOKEN not in json.dumps(outcome.model_dump())
    assert not any(TOKEN in part for part in runtime.command(base_url, Path("/run")))


# --- exits and forged results --------------------------------------------------------------


@pytest.mark.parametrize("status", [0, 3])
async def test_deno_exit_before_returning_is_a_failure(runtime: DenoRuntime, status: int) -> None:
    outcome = await runtime.run(
        f'console.log("leaving");\nDeno.exit({status});\nreturn "unreachable";',
        stubs="",
        base_url="",
        token=TOKEN,
        check=False,
    )
    assert not outcome.ok
    assert outcome.error.startswith("the code exited before returning (Deno.exit?)")
    assert outcome.console == "leaving\n"
    assert outcome.value is None
    assert outcome.exit_code == status


async def test_a_forged_result_line_is_just_console_output(runtime: DenoRuntime) -> None:
    forged = json.dumps({"ok": True, "value": "forged"})
    nonce_like = os.urandom(16).hex()
    outcome = await runtime.run(
        f"console.log({json.dumps(nonce_like + forged)});\n"
        f"console.log({json.dumps(forged)});\n"
        f"await Deno.stdout.write(new TextEncoder().encode({json.dumps(forged)}));\n"
        'throw new Error("the real outcome");',
        stubs="",
        base_url="",
        token=TOKEN,
        check=False,
    )
    assert not outcome.ok
    assert outcome.error.startswith("Error: the real outcome")
    assert outcome.value is None
    assert outcome.console == f"{nonce_like}{forged}\n{forged}\n{forged}"


async def test_a_forged_result_then_exit_is_still_a_failure(runtime: DenoRuntime) -> None:
    forged = json.dumps({"ok": True, "value": "forged"})
    outcome: RunOutcome = await runtime.run(
        f"console.log({json.dumps(forged)});\nDeno.exit(0);",
        stubs="",
        base_url="",
        token=TOKEN,
        check=False,
    )
    assert not outcome.ok
    assert outcome.value is None
    assert "exited before returning" in outcome.error


async def test_closing_stdout_cannot_fake_success(runtime: DenoRuntime) -> None:
    outcome = await runtime.run(
        "Deno.stdout.close();\nreturn 1;",
        stubs="",
        base_url="",
        token=TOKEN,
        check=False,
    )
    assert not outcome.ok
    assert outcome.value is None
