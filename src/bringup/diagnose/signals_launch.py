"""The ladder's launch half: what the launch refused, whichever engine refused it.

Argument validation as any parser phrases it and requests longer than the context; model
files refused by format version versus files that are not a model; evidence of a hang; and,
weakest, the vocabulary of a message no rule knows (which noun refused, with which verb).
Assembled with :mod:`bringup.diagnose.signals_runtime` by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import REFUSED_ONLY, FrameRule, Rule, frame_rule, rule
from bringup.verdict import Category as C

_CONTEXT = (
    "the request is longer than the configured context: shorten the prompt or max tokens, "
    "or raise the context length the engine serves"
)
_ARGS = "fix the flag or value the launcher rejected (check the engine's --help)"
# the rules of the model's refusals below read only lines that are refusals (rule.py)
_REFUSED = REFUSED_ONLY
# a Hugging Face model class: "Qwen2ForCausalLM", "Gemma3ForConditionalGeneration"
_MODEL_CLASS = (
    r"\b[A-Z]\w*For(?:CausalLM|ConditionalGeneration|SequenceClassification|MaskedLM|"
    r"Seq2SeqLM|TokenClassification|QuestionAnswering|ImageTextToText|TextEncoding|Embedding)\b"
)

RULES: tuple[Rule, ...] = (
    # --- 5. argument validation, whatever the parser ---------------------------------
    rule(
        r"error: invalid value '[^']*' for '-{1,2}[\w-]+|"
        r"error: unexpected argument '-{1,2}[\w-]+'|Found argument '[^']+' which wasn't "
        r"expected|flag provided but not defined: -|-{1,2}[\w-]+:? unknown argument|"
        r"invalid parameter for argument|failed to parse flags|"
        r"unknown (?:option|flag|argument)s?:? '?-{1,2}[\w-]+|unrecognized option '?-",
        C.INVALID_CONFIG,
        5,
        _ARGS,
        name="cli-rejected",
    ),
    rule(
        r"ArgumentValidation|`\w+`\s*(?:\(\d+\)\s*)?must be (?:<=?|>=?|lower|greater|smaller|"
        r"larger|less|at (?:most|least)|strictly)|"
        r"\b\w*(?:max|min|num|size|len|tokens)\w* (?:\(\d+\) )?must be (?:<=?|>=?|less|"
        r"greater|at (?:most|least))",
        C.INVALID_CONFIG,
        4.5,
        "one setting must stay below another (e.g. max input tokens below max total "
        "tokens): change the values the message names",
        name="bound-validation",
    ),
    rule(
        r"is longer than the (?:model's )?(?:maximum )?context length|"
        r"maximum context length is \d+ tokens|"
        r"exceeds? (?:the )?(?:model's |available )?(?:maximum )?(?:context|max_model_len|"
        r"max_seq_len|n_ctx)\b|"
        r"(?:prompt|input|request) (?:is )?too long|"
        r"is longer than the maximum model length|"
        r"(?:has )?exceeded the maximum (?:sequence|input|model) length|"
        r"(?:prompt|input)(?: length)? \(?\d+(?: tokens)?\)? (?:exceeds|is longer than|"
        r"is larger than)",
        C.INVALID_CONFIG,
        4.5,
        _CONTEXT,
        name="request-longer-than-context",
    ),
    # pydantic's own wording for a value a settings model refused
    rule(
        r"Input should be (?:a valid|greater|less|one of|an? )|Extra inputs are not permitted|"
        r"validation errors? for \w+(?:Args|Config|Settings|Options)\b",
        C.INVALID_CONFIG,
        4,
        "a setting has a value (or a name) the engine's settings model refuses: fix the "
        "field the message names",
        name="settings-model-refused",
    ),
    rule(
        r"cannot assign requested address|\[Errno 99\]|EADDRNOTAVAIL",
        C.INVALID_CONFIG,
        5,
        "the host address to bind is not on this machine (or IPv6 is off): bind "
        "127.0.0.1 or an address this host has",
        name="bind-address-not-here",
    ),
    rule(
        r"listen tcp [\w.:\[\]-]*:\d+: bind: |bind\(\) to [\w.:]+ failed|"
        r"only one usage of each socket address",
        C.PORT_IN_USE,
        4,
        "another process holds the port: stop it or let bringup pick a free port",
        name="listen-bind-failed",
    ),
    # parallel sizes that do not multiply to the number of ranks
    rule(
        r"(?:mpi_?size|world_?size|num_?gpus|n_?ranks)\s*==\s*\w*(?:tp|pp|parallel)\w*\s*\*|"
        r"world size \(?\d+\)? (?:does not|doesn't) (?:match|equal)",
        C.INVALID_CONFIG,
        4.5,
        "the number of ranks must equal tensor x pipeline parallel size: launch as many "
        "ranks as tp*pp, or change the parallel sizes",
        name="world-size-mismatch",
    ),
    rule(
        r"Failed: MPI error|MPI_ERR_\w+|MPI error \d+",
        C.DISTRIBUTED_FAILURE,
        4.5,
        "MPI between ranks failed: check the MPI launch (mpirun -n, UCX/OMPI settings) "
        "and the interconnect",
        name="mpi-error",
    ),
    # the model's repository ships its own code, which runs only when allowed
    rule(
        r"contains custom code which must be executed|"
        r"(?:pass|set|consider setting) (?:the argument )?`?trust_remote_code(?:=True)?`?|"
        r"requires you to execute the (?:configuration|modeling) file",
        C.INVALID_CONFIG,
        4,
        "the model brings its own code: allow it (--trust-remote-code) if the repository is "
        "trusted",
        name="needs-trust-remote-code",
    ),
    # CUDA initialised before the engine forked its workers: the start method is a setting
    rule(
        r"Cannot re-initialize CUDA in forked subprocess",
        C.INVALID_CONFIG,
        4.5,
        "CUDA was initialised before the workers were forked: use the spawn start method "
        "(VLLM_WORKER_MULTIPROC_METHOD=spawn) and do not touch CUDA before the engine starts",
        name="cuda-before-fork",
    ),
    # --- 6. model files: refused format version vs not a model at all ----------------
    rule(
        r"unknown \(magic, version\) combination|is this really a GGML file|"
        r"bad magic \[got 0x[0-9a-f]+ want|invalid model file .*\(bad magic|"
        r"(?:too old|unsupported) (?:GGML|GGUF|model file) (?:format|version)|"
        r"this format is no longer supported",
        C.MODEL_INCOMPATIBLE,
        5.5,
        "the file's format version does not match this loader (old GGML vs GGUF): "
        "convert the model for this build, or use the build of its era",
        name="model-format-version",
    ),
    rule(
        r"invalid ggml type|unknown (?:ggml |tensor )?type \d+|GGUF version \d+ is not supported|"
        r"unsupported (?:tensor|ggml|quant(?:ization)?) type",
        C.MODEL_INCOMPATIBLE,
        5.5,  # above the "failed to read tensor info" it causes
        "the file uses a tensor type or format version this build does not know: a newer "
        "build, or a file quantized for this one",
        name="tensor-type-unknown",
    ),
    rule(
        r"invalid file magic|not a valid GGUF|failed to parse GGUF",
        C.MODEL_LOAD_FAILURE,
        4.5,
        "the file is not a model file (an HTML page, a git-lfs pointer, a partial "
        "download or safetensors where GGUF is expected): fetch the real file",
        name="file-not-a-model",
    ),
    rule(
        r"max retries exceeded|error pulling|failed to (?:download|fetch) (?:the )?"
        r"(?:model|weights|file|manifest)|download (?:failed|interrupted)|\bDownloadError\b|"
        r"Download encountered an error|download\w*: invalid http status code received: 4\d\d",
        C.MODEL_LOAD_FAILURE,
        4,
        "the model download failed: retry, check the network/proxy, or pre-download",
        name="download-failed",
    ),
    rule(
        r"Cannot find any model weights|No model weights found|"
        r"No supported config format found in|is not a valid JSON file|"
        r"(?:failed|unable) to load (?:the )?tokenizer\b",
        C.MODEL_LOAD_FAILURE,
        4,
        "the model directory lacks readable weights, config or tokenizer: check the path "
        "and that the download is complete",
        name="model-files-missing",
    ),
    rule(
        r"Permission denied.{0,40}(?:\.gguf|\.safetensors|config\.json|/models?/|"
        r"huggingface|\.bin\b)",
        C.MODEL_LOAD_FAILURE,
        4,
        "the engine may not read the model files: fix their ownership/permissions (or the "
        "volume's mount options)",
        name="model-files-not-readable",
    ),
    rule(
        r"Tokenizer class \w+ does not exist or is not currently imported",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the installed transformers does not know the model's tokenizer class: a newer "
        "transformers, or --trust-remote-code",
        name="tokenizer-class-unknown",
    ),
    rule(
        r"Invalid repository ID or local directory",
        C.MODEL_LOAD_FAILURE,
        5.5,
        "check the model path/name and access (accept the licence, log in to the hub, "
        "or point at a local copy)",
        name="model-path-invalid",
    ),
    rule(
        r"weight [\w.]+ does not exist|(?:Missing|Unexpected) key\(?s\)? in state_dict|"
        r"no (?:weight|tensor) named [\w.'\"]+ in|cannot find tensor [\w.'\"]+",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the checkpoint's weight names do not match this engine's model code: use a "
        "checkpoint layout/architecture the engine supports",
        name="weight-name-missing",
    ),
    rule(
        r"architectures? \[?[\w', ]*\]? (?:are|is) not (?:yet )?supported|"
        r"(?:sharded|sharding|tensor parallel(?:ism)?) is not supported for|"
        r"(?:does not|doesn't) support head ?dim",
        C.MODEL_INCOMPATIBLE,
        4.5,
        name="model-not-supported",
    ),
    rule(
        r"not supported (?:in|on|by) (?:this|your|the current) (?:architecture|GPU|device|"
        r"hardware|platform)|\b(?:amd)?gpu is not supported|gfx\d+\w* (?:is )?not supported|"
        r"fp8e4nv not supported|requires Flash Attention enabled models",
        C.UNSUPPORTED_HARDWARE,
        5,
        "no kernel for this GPU: choose a backend, dtype or build that supports it",
        name="no-kernel-for-this-gpu",
    ),
    # transformers' Auto classes without a mapping for this config class
    rule(
        r"Unrecognized configuration class .{0,200}? for this kind of AutoModel",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the installed transformers has no model class of this kind for the model's config: "
        "a newer transformers/engine, or a model of a supported kind",
        name="no-auto-class-for-config",
    ),
    # ranks waiting on each other for a message that never comes (vLLM's shared-memory
    # broadcast between its workers): a hang, as it says
    rule(
        r"No available shared memory broadcast block found in \d+ seconds?",
        C.STARTUP_TIMEOUT_OR_HANG,
        4.5,
        "a worker stopped answering the others (hung in a collective, a compile or a kernel): "
        "see the last lines of each rank; --disable-custom-all-reduce, or NCCL_DEBUG=INFO",
        name="ranks-waiting-on-a-broadcast",
    ),
    # a Hugging Face model class named beside a refusal: the model is what is refused
    rule(
        _REFUSED
        + r"(?:"
        + _MODEL_CLASS
        + r"['\"\]]*[^.]{0,80}?\b(?:is |are )?(?:not (?:yet )?supported|unsupported|"
        r"does not support|doesn't support|not (?:yet )?implemented|has no \w+ implementation|"
        r"is not compatible with)|"
        r"(?:not (?:yet )?supported|unsupported|not (?:yet )?implemented)[^.]{0,60}?"
        + _MODEL_CLASS
        + r"|^KeyError: ['\"]"
        + _MODEL_CLASS
        + r"['\"]$)",
        C.MODEL_INCOMPATIBLE,
        4,
        "this engine version has no implementation of the model's class (or not with the "
        "feature named): a newer engine, --trust-remote-code, or a supported model",
        case=True,
        name="model-class-refused",
    ),
    # quantized weights asked for where the checkpoint holds none (TGI's loaders)
    rule(
        r"Cannot load `?\w+`? weight, make sure the model is already quantized",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the checkpoint is not quantized with the method asked for: drop --quantize, or use "
        "a checkpoint quantized with it",
        name="checkpoint-not-quantized",
    ),
    # what the model's own config asks for, refused: a newer model than the code
    rule(
        _REFUSED + r"(?:not (?:yet )?supported|unsupported|not (?:yet )?implemented|"
        r"(?:does not|doesn't) (?:yet )?support \w+)[^.]{0,40}?\b(?:for|by|with|in|on) "
        r"(?:this|the|the current|the given|your|this kind of) model\b",
        C.MODEL_INCOMPATIBLE,
        4,
        "the engine does not support this for this model: a model it supports, or "
        "without the feature the message names",
        name="refused-for-this-model",
    ),
    rule(
        _REFUSED + r"(?:(?:cannot|can't|could not|couldn't|unable to|failed to) find [^.]{0,80}? "
        r"in the model'?s (?:\w+ ){0,2}config|"
        r"(?:missing|not found|absent) (?:in|from) (?:the )?model'?s (?:\w+ ){0,2}config|"
        r"model'?s (?:\w+ ){0,2}config(?:\.json)? (?:is missing|has no|does not (?:have|contain)|"
        r"lacks))",
        C.MODEL_INCOMPATIBLE,
        4,
        "the model's config lacks what this engine reads: a checkpoint in the layout the "
        "engine supports, or a newer engine",
        name="model-config-lacks-a-field",
    ),
    # rope scaling written by a newer transformers than the one installed (Llama 3.1's
    # rope_type llama3, yarn, longrope): the model's config, not a flag
    rule(
        _REFUSED + r"(?:\brope[_ ]?scaling\b`?[^.]{0,60}?\b(?:must be a dictionary|"
        r"(?:type )?field must be|"
        r"unknown|unsupported|not supported|not recogni[sz]ed)|"
        r"\b(?:unknown|unsupported|unrecogni[sz]ed) rope(?:[_ ]?(?:scaling|type))?\b|"
        r"\brope[_ ]type\b[^.]{0,40}?\bnot (?:supported|recogni[sz]ed))",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the model's rope_scaling is newer than this engine/transformers: upgrade them, "
        "or override rope scaling explicitly",
        name="rope-scaling-unknown",
    ),
    # a chat request to a model whose tokenizer brings no chat template
    rule(
        # only the refusals: "no chat template found, using chatml" is the engine carrying on
        _REFUSED + r"(?:chat[_ ]template is not set|must provide a chat template|"
        r"default chat template is no longer allowed|Cannot use chat template|"
        r"(?:does not|doesn't) (?:have|define|contain) a chat[_ ]template)",
        C.INVALID_CONFIG,
        4.5,
        "the model's tokenizer defines no chat template: pass one (--chat-template FILE) "
        "or use the completions endpoint",
        name="chat-template-missing",
    ),
    # --- 7. evidence of a hang --------------------------------------------------------
    rule(
        r"<\s*hangs?\b|\bhangs? (?:for|forever|at|after|indefinitely)|"
        r"\b(?:is|gets|got|stays?) stuck\b|Waiting for shard (?:\d+ )?to be ready|"
        r"taken more than \d+s to initialize|timed out waiting for|"
        r"never (?:becomes|became) (?:ready|healthy)|"
        r"\b(?:hung|freezes|froze)\b (?:at|on|after|while|forever|for|here|indefinitely|up)\b|"
        r"blocked for more than \d+ seconds",
        C.STARTUP_TIMEOUT_OR_HANG,
        3,
        "the engine stopped making progress: see the stage it reached, raise the start "
        "timeout if it is only slow, or look at what it waits on",
        name="hang-evidence",
    ),
    # a timeout with no collective named (NCCL/gloo timeouts score higher above)
    rule(
        r"\bTimeoutError\b|\btimed out after \d+|\btimeout (?:after|of \d|expired|reached)|"
        r"\bReadTimeout\b|deadline exceeded",
        C.STARTUP_TIMEOUT_OR_HANG,
        2.5,
        "something the engine waited on never answered: see what it waited on (the "
        "lines before), raise the timeout if it is only slow",
        name="timeout",
    ),
    # --- 8. the message's own vocabulary, when no wording above is known -------------
    # Weaker than every rule above (2-2.5, x1.3 on a final exception line), stronger
    # than "an error happened": the noun and verb of an unknown message still say which
    # part of the launch refused.
    rule(
        r"\b(?:model|architecture|checkpoint|quantization|tokenizer|format|layer|rope)"
        r"(?:[_ ]type)?s?\b[^.]{0,80}?\b(?:is |are )?(?:not (?:yet )?supported|unsupported|"
        r"not implemented|not recogni[sz]ed)|"
        r"\b(?:unsupported|unknown|unrecogni[sz]ed) (?:model|architecture|quantization|"
        r"tokenizer|rope|checkpoint|weight)",
        C.MODEL_INCOMPATIBLE,
        2.2,
        name="message-model-refused",
    ),
    rule(
        r"\b(?:invalid|unknown|unrecogni[sz]ed|unsupported) (?:argument|option|flag|value|"
        r"parameter|setting|choice|config(?:uration)?|combination)|"
        r"\bmust be (?:one of|a positive|positive|non-negative|between|in \[|set to)|"
        r"\bexpected one of\b|\bis not a valid\b|\bcannot be (?:used|set|combined|enabled)|"
        r"\bis required when\b|\bconflicts? with\b|"
        r"\bmust be [\w.-]+ (?:when|if) (?:using|enabling|running|with)\b|"
        r"\bis not allowed (?:with|when|for|in|together)\b|\bcannot both be\b|"
        r"\bonly one of .{1,80}? (?:can|may|should|must) be (?:set|specified|used|given|enabled)",
        C.INVALID_CONFIG,
        2.2,
        name="message-setting-refused",
    ),
    rule(
        r"\b(?:model|config|tokenizer|weights?|checkpoint|safetensors|file|path|directory|"
        r"repo(?:sitory)?)\b[^.]{0,80}?\b(?:not found|does not exist|doesn't exist|"
        r"could not be found|cannot be found|is missing)",
        C.MODEL_LOAD_FAILURE,
        2.2,
        name="message-file-missing",
    ),
)

FRAME_RULES: tuple[FrameRule, ...] = (
    # the model type is not in the (too old) library's mapping
    frame_rule(
        r"KeyError|ValueError",
        r"configuration_auto|CONFIG_MAPPING|model_registry|:resolve_model_cls",
        C.MODEL_INCOMPATIBLE,
        3,
        "the installed library does not know this model type: a newer engine or "
        "transformers, or --trust-remote-code",
    ),
    # the checkpoint converter met a tensor layout it does not know
    frame_rule(
        r"KeyError|AssertionError|ValueError",
        r"convert_checkpoint|:from_hugging_face|:convert_hf\w*|:load_from_hf\w*",
        C.MODEL_INCOMPATIBLE,
        2.5,
        "the checkpoint layout does not match what the converter expects: a checkpoint of a "
        "supported architecture, or a newer engine",
    ),
    # validation code rejected a setting
    frame_rule(
        r"ValueError|AssertionError|TypeError|NotImplementedError|ValidationError",
        r":_?(?:validate|verify)\w*|/(?:args|cli_args|engine_args|arg_utils)\.py|"
        r":parse_args|:from_cli_args",
        C.INVALID_CONFIG,
        2.5,
    ),
    # a tokenizer that cannot be built from the model's files
    frame_rule(
        r"TypeError|OSError|ValueError|RuntimeError|Exception",
        r"sentencepiece|tokenization_\w+\.py:__init__|LoadFromFile",
        C.MODEL_INCOMPATIBLE,
        2.5,
        "the model's tokenizer files do not fit the tokenizer class: check the "
        "tokenizer files, or pass the matching tokenizer",
    ),
    # an exception raised while picking the model implementation
    frame_rule(
        r"NotImplementedError|ValueError",
        r"models/__init__\.py:get_model|model_registry|:get_model_architecture",
        C.MODEL_INCOMPATIBLE,
        2.5,
    ),
)
