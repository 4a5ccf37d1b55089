"""The ladder's platform half: what the layers around an engine print when it fails.

A pasted report often holds no engine line at all, only what the wrapper around it said:
the shell's or container runtime's exit code, a service manager's or Kubernetes' account
of a restart loop, the model repository of an inference server refusing its own config
files, a framework that found no GPU platform, a library that could not be loaded. Each
says what a person reads at once:

- exit codes as the shell counts them (128 + signal): 132 an illegal instruction (the
  CPU lacks an instruction set), 134/139 an abort or segfault (a crash), 127 a command or
  its library that is not there (137, SIGKILL, is in ``rules_generic``);
- a restart loop (``CrashLoopBackOff``, systemd's "entered failed state") says only that
  the process keeps dying: a guess at a crash, the cause elsewhere;
- a path the process may not create or open (``permission denied``) is the deployment's
  setting, not the engine's fault;
- an inference server's model configuration that does not parse (a template value left
  unfilled) is a setting; an empty or truncated JSON file it reads (the engine's
  ``config.json``) is a model file that is not readable; a backend it cannot find is not
  installed;
- a framework reporting no GPU platform, or CUDA not available, cannot reach the GPU
  runtime (driver libraries not visible to the container, a CPU-only build);
- a shared library (a DLL) that cannot be found or loaded, or a traceback that stops
  inside the loader, is a missing or mismatched install;
- Ray's out-of-memory error (its name cut short in a post still names it) is the host's;
  a notebook traceback pointing at an ``import`` line is an install that does not load;
- a GGML ``.bin`` model that a loader cannot load is of the file format the GGUF-era
  loaders no longer read.

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import FrameRule, Rule, frame_rule, rule
from bringup.verdict import Category as C

_EXIT = r"(?:exit(?:ed)?(?: with)?(?: code| status)?|exit ?code|exitCode|status)[=:( ]{1,3}"
_LIBRARY = (
    "a shared library the engine needs cannot be found or loaded: reinstall the package "
    "(its GPU build) and the runtime it links against"
)

RULES: tuple[Rule, ...] = (
    # --- exit codes as a shell, a container runtime or a service manager prints them ---
    rule(
        _EXIT + r"132\b|\bsignal 4 \(Illegal",
        C.UNSUPPORTED_HARDWARE,
        4,
        "the process died of an illegal instruction (exit 132): use a build for this CPU",
        name="exit-code-132-sigill",
    ),
    rule(
        _EXIT + r"1(?:34|39)\b",
        C.RUNTIME_CRASH,
        2.5,
        name="exit-code-abort-or-segfault",
    ),
    rule(
        _EXIT + r"127\b|status=127/|\bcommand not found\b",
        C.MISSING_DEPENDENCY,
        3,
        "the command (or a library it needs) is not installed where the service looks: "
        "reinstall it, or fix the path the service runs",
        name="exit-code-127-not-found",
    ),
    # a supervisor restarting a process that keeps dying: it crashed, the cause elsewhere
    rule(
        r"CrashLoopBackOff|Back-off restarting failed container|entered failed state|"
        r"Failed with result 'exit-code'|holdoff time over, scheduling restart|"
        r"Main process exited, code=(?:exited|killed|dumped)",
        C.RUNTIME_CRASH,
        1.5,
        consequence=True,
        name="supervisor-restart-loop",
    ),
    # --- the deployment, not the engine ------------------------------------------------
    rule(
        r"\b(?:mkdir|open|create|write|chmod|access)\b[^\n]{0,120}?: permission denied|"
        r"PermissionError: \[Errno 13\]|\bcould not create directory\b[^\n]{0,80}denied",
        C.INVALID_CONFIG,
        3.5,
        "the process may not use a path it is configured to use: give its user access to "
        "it, or point the setting at a writable directory",
        name="path-permission-denied",
    ),
    # an inference server's model repository: the config text does not parse
    rule(
        r"failed to read text proto|Error parsing text-format inference\.ModelConfig",
        C.INVALID_CONFIG,
        4,
        "the model configuration (config.pbtxt) does not parse: fill every template value "
        "(${...}) and fix the line the parser names",
        name="model-config-does-not-parse",
    ),
    # a JSON file read at load (the engine's config.json) is empty or cut
    rule(
        r"parse error at line 1, column 1|unexpected end of input; expected",
        C.MODEL_LOAD_FAILURE,
        3,
        "a JSON file the engine reads at load (its config.json) is empty or missing: "
        "put the file the model directory should hold next to the engine",
        name="json-file-empty",
    ),
    rule(
        r"unable to find '[^']+' for model|unable to (?:find|load) backend (?:library )?'|"
        r"\bunable to find backend library for backend\b",
        C.MISSING_DEPENDENCY,
        3.5,
        "the server has no such backend installed: use the image that ships it",
        name="server-backend-not-installed",
    ),
    # --- the framework cannot reach a GPU -----------------------------------------------
    rule(
        r"No platform detected|\bUnspecifiedPlatform\b|"
        r"\bIs CUDA available\s*:\s*False|CUDA platform is not available because",
        C.MISSING_DEPENDENCY,
        3.5,
        "the framework sees no GPU platform: make the driver libraries and devices visible "
        "(e.g. the NVIDIA container runtime, --gpus all) or install the GPU build",
        name="no-gpu-platform",
    ),
    # Ray's out-of-memory error, also when a post cuts its name short
    rule(
        r"\bray\.exceptions\.OutOfMe\w*|"
        # the memory monitor's own report, which opens every such kill
        r"\bMemory on the node \(IP: [\d.:a-f]+, ID: \w+\) where the (?:task|actor)\b|"
        r"\bexceeds the memory usage threshold\b",
        C.OOM_HOST,
        5,
        "Ray's memory monitor killed a worker: the node ran low on host RAM; give it more "
        "or lower what each worker holds",
        name="ray-out-of-memory",
    ),
    # --- libraries that cannot be loaded ------------------------------------------------
    # IPython/Jupyter marks the failing statement with an arrow: an import that failed
    rule(
        r"^-+> +\d+ (?:import|from) [\w.]+",
        C.MISSING_DEPENDENCY,
        1.9,
        "importing the package failed: reinstall it at the versions the engine pins, with "
        "a driver and CUDA it supports",
        name="notebook-import-failed",
    ),
    rule(
        r"Could not find module '[^']+\.dll'|\bDLL load failed\b|"
        # a loader naming the library file it could not load (a backend, a plugin)
        r"\bfailed to load \S+\.(?:dll|so(?:\.[\d.]+)?|dylib)\b|"
        r"\b[\w.-]+\.dll (?:is|was) (?:missing|not found)\b|"
        r"\bcannot load library\b|\bfailed to load (?:shared )?library\b",
        C.MISSING_DEPENDENCY,
        4,
        _LIBRARY,
        name="library-not-loadable",
    ),
    # a GGML-era model file handed to a loader that no longer reads the format
    rule(
        r"(?:failed to load|could not load|error loading|cannot load)[^\n]{0,120}?"
        r"\bggml[\w.-]*\.bin\b",
        C.MODEL_INCOMPATIBLE,
        5,
        "the model is an old GGML .bin file: use its GGUF version (or convert it), or a "
        "loader that still reads GGML",
        name="ggml-file-not-loadable",
    ),
)

FRAME_RULES: tuple[FrameRule, ...] = (
    # an exception raised while a shared library was being loaded (ctypes, the loader)
    frame_rule(
        r".*",
        r":_load_shared_library|ctypes[/\\]__init__\.py|ctypes_init_\.py|:_dlopen",
        C.MISSING_DEPENDENCY,
        3,
        _LIBRARY,
    ),
)
