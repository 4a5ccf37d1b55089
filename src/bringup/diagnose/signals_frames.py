"""The ladder's frame half: where an exception was raised, when no rule reads its message.

A traceback whose exception no rule knows (or that a post cuts before its exception line)
still says which part of the program failed, by the frames it passed through. Libraries keep
their concerns in named places, whatever the engine on top:

- a version check (``assert_pkg_version``, ``require_version``, ``check_*version``) raising:
  an installed package of another version than the engine needs;
- the hub client or an HTTP library: the model could not be fetched;
- a just-in-time kernel build (``cpp_extension``, ``_run_ninja_build``): the toolchain;
- the code that connects ranks (PyNccl, custom all-reduce, device communicators, the
  parallel-state set-up, Ray's compiled-graph channels): the distributed set-up;
- the chat-template renderer (``apply_chat_template``, Jinja): the template refused the
  request;
- LoRA and structured-output code: the feature the launch or request switched on;
- the lookup of the model's class by its architecture name: the model is not one the engine
  knows;
- the memory profile run and CUDA-graph capture (``profile_run``,
  ``determine_available_memory``, ``_capture_cuda_graphs``): the GPU's memory, most often.

A frame says where, not why, so every rule here is below the classifier's ``_CAUSE`` (2):
it decides only as a guess (confidence under 0.5), and only over the catch-alls ("a
traceback happened", an error-level line); any rule that reads the message outweighs it.
The version check is the exception: a check whose only job is a version is a cause; so is
a step cancelled inside the engine loop that waits on it with a timeout (a hang).
Assembled by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import FrameRule, frame_rule
from bringup.verdict import Category as C

_ANY = r".*"  # every exception type, and a traceback cut before its exception ("")
_GUESS = 1.9

FRAME_RULES: tuple[FrameRule, ...] = (
    # the engine loop's own timeout (vLLM's async engine waits on each step with one): a
    # step cancelled or timed out there is a step that hung, not a crash
    frame_rule(
        r"\w*(?:CancelledError|TimeoutError)$",
        r":run_engine_loop$",
        C.STARTUP_TIMEOUT_OR_HANG,
        2.5,
        "an engine step did not return within the engine loop's timeout: the engine hung "
        "while serving; run with one GPU or eager mode to find the part that hangs",
    ),
    frame_rule(
        _ANY,
        r":(?:assert_pkg_version|require_version\w*|check_\w*version\w*|_check_version|"
        r"verify_\w*version\w*)$",
        C.MISSING_DEPENDENCY,
        2.5,
        "a version check refused an installed package: install the version the engine "
        "release pins (the check's message names the package)",
    ),
    frame_rule(
        _ANY,
        r"[/\\]cpp_extension\.py|:(?:_run_ninja_build|_jit_compile|_write_ninja_file_and_"
        r"\w*|build_and_load\w*)$|[/\\]jit[/\\]\w*(?:cpp_ext|core|env)\w*\.py",
        C.MISSING_DEPENDENCY,
        _GUESS,
        "a kernel was being compiled just in time when it failed: install the CUDA toolkit "
        "(nvcc) and headers the JIT build needs, or a prebuilt wheel of the kernel library",
    ),
    frame_rule(
        _ANY,
        r"huggingface_hub[/\\]|:(?:hf_hub_download|snapshot_download)$|"
        r"[/\\](?:requests|urllib3|httpx)[/\\]",
        C.MODEL_LOAD_FAILURE,
        _GUESS,
        "fetching the model failed: check the network, the model name and access (a token "
        "for gated models), or point at a local copy",
    ),
    frame_rule(
        _ANY,
        r"[/\\]device_communicators[/\\]|pynccl|custom_all_reduce|"
        r"[/\\]distributed[/\\]parallel_state\.py",
        C.DISTRIBUTED_FAILURE,
        _GUESS,
        "setting up communication between ranks failed: run with NCCL_DEBUG=INFO, check "
        "/dev/shm and peer access between the GPUs (NCCL_P2P_DISABLE=1 to test)",
    ),
    frame_rule(
        _ANY,
        r"[/\\]ray[/\\](?:experimental[/\\]channel|dag[/\\]compiled_dag)",
        C.DISTRIBUTED_FAILURE,
        _GUESS,
        "the ranks exchange data over Ray's compiled-graph channels and one stopped: check "
        "that every worker (and node) is alive, and the shared memory (/dev/shm) each has",
    ),
    frame_rule(
        _ANY,
        r":apply_chat_template$|chat_utils\.py|[/\\]jinja2[/\\]",
        C.INVALID_CONFIG,
        _GUESS,
        "rendering the chat template failed: pass a template that fits the messages "
        "(--chat-template) or send messages the model's template accepts",
        flags=("--chat-template",),
    ),
    frame_rule(
        _ANY,
        r"[/\\]lora[/\\]|punica|[/\\]peft[/\\]|guided_decoding|structured_output|"
        r"xgrammar|[/\\]outlines[/\\]|lm_format_enforcer",
        C.INVALID_CONFIG,
        _GUESS,
        "the feature switched on for this launch or request (a LoRA adapter, structured "
        "output) failed: check its settings, or try without it",
    ),
    frame_rule(
        _ANY,
        r":(?:determine_available_memory|determine_num_available_blocks|profile_run|"
        r"_dummy_run|_dummy_sampler_run|_run_cuda_graph_warmup|_?capture_\w*(?:cuda_)?graphs?)$",
        C.OOM_GPU,
        _GUESS,
        "the engine was measuring or filling GPU memory (a profile run, CUDA-graph capture) "
        "when it failed, where most failures are out of memory: lower the memory share, "
        "the batch or context, or the captured batch sizes",
    ),
    frame_rule(
        _ANY,
        r":(?:get_model_cls\w*|_?get_model_architecture|resolve_model_cls\w*|"
        r"_?try_resolve\w*|inspect_model_cls)$|ModelRegistry",
        C.MODEL_INCOMPATIBLE,
        _GUESS,
        "the engine looked the model's architecture up and failed: a model it supports, "
        "or an engine version that supports this one",
    ),
)
