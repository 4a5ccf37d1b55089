"""The ladder's feature half: a feature the user turned on, refused by the code behind it.

Engines fail most often not on the plain model but on what is switched on around it: LoRA
adapters, image and audio inputs, a draft model for speculative decoding, a grammar or JSON
schema for structured output, an embedding or reranking task, a chat template and tool
calling. Each feature has its own vocabulary, and a refusal pairs that vocabulary with a
constraint (``must``, ``exceeds``, ``not supported``, ``requires``, a parse error). The
feature is a setting of the launch or the request, so these read as a refused
configuration, except where the message says the *model* lacks the feature (an embedding
model asked to generate, a text model sent an image), which is the model's:

- LoRA: a rank, count or module beyond what the launch allows;
- multimodal: more images than allowed, placeholders that do not match, or a model with no
  such input;
- speculative decoding: a draft or method the configuration cannot combine;
- structured output: a grammar or schema that does not parse or is not supported;
- the task: embeddings or pooling not enabled, or a model that cannot do the task asked;
- chat templates: a template that raised on the messages (roles that must alternate) or
  that the launch names and the engine cannot find, tool calling without its parser; a
  template that does not parse or render under the engine's Jinja (a syntax error, an
  operator on an undefined value) is the model's (its tokenizer ships it), not a setting;
- an assertion or exception whose message names a setting (a ``--flag``, a snake_case
  option such as ``max_num_seqs`` or ``tp_size``) beside a constraint: the value refused;
- a feature that another setting rules out ("cannot be enabled because ... is not
  supported");
- a setting of the model's own config that contradicts a flag (quantization given twice).

Weights sit with the message grammar (2.4-3.5): below a rule that names the cause outright,
above the vocabulary guesses. Assembled by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import REFUSED_ONLY, Rule, rule
from bringup.verdict import Category as C

# a refusal or a constraint, in the words validators use
_CONSTRAINT = (
    r"(?:must|should|cannot|can't|can not|is not (?:supported|allowed|valid|enabled)|"
    r"are not (?:supported|allowed|enabled)|not supported|unsupported|exceeds?|exceeded|"
    r"(?:greater|larger|less|smaller|more|fewer) than|not divisible|requires?|invalid|"
    r"out of range|at most|at least|mismatch|does not match|doesn't match)"
)
# a setting named in a message: a flag, or an option in snake_case with a setting's word
_SETTING = (
    r"(?:--[a-z][\w-]+|\b(?:max|min|num|n)_\w+|\b\w+_(?:size|len|length|tokens|seqs|batch|"
    r"ratio|utilization|fraction|rank|dtype|parallel|degree|budget|limit)\b)"
)

# an assertion's opening as C++, ggml and Python write it, before its condition or message
_ASSERTION = r"\b(?:Assertion failed|GGML_ASSERT|assert)\b\W{0,3}"

RULES: tuple[Rule, ...] = (
    # --- LoRA -------------------------------------------------------------------------
    rule(
        REFUSED_ONLY
        + r"(?:\b(?:LoRA|lora)\b|\bmax_loras?\b|\bmax_lora_rank\b)[^.\n]{0,80}?\b"
        + _CONSTRAINT,
        C.INVALID_CONFIG,
        2.8,
        "the LoRA adapter does not fit the launch's LoRA settings: raise --max-lora-rank / "
        "--max-loras to the adapter's, or use an adapter of the supported rank and modules",
        name="lora-refused",
        flags=("--max-lora-rank", "--max-loras", "--enable-lora", "--lora-modules"),
    ),
    # --- image, audio and video inputs -------------------------------------------------
    rule(
        r"\b(?:model|it) (?:does not|doesn't|do not) (?:support|accept) (?:\w+ ){0,2}?"
        r"(?:multimodal|multi-modal|image|vision|audio|video|embedding|pooling|generat\w*|"
        r"rerank\w*|scor\w*|classification)s?\b|"
        r"\bis not a (?:multimodal|multi-modal|vision) model\b|"
        r"\b(?:multimodal|multi-modal|vision|image) (?:inputs? )?(?:is |are )?not supported "
        r"(?:for|by) (?:this|the) model\b",
        C.MODEL_INCOMPATIBLE,
        3,
        "the model has no such input or task: send what it takes (text only, the task it "
        "was made for), or serve a model that has it",
        name="model-lacks-modality-or-task",
    ),
    rule(
        r"\blimit_mm_per_prompt\b|\b(?:images?|videos?|audios?) per prompt\b|"
        r"\b(?:number of|too many) (?:images?|videos?|audios?)\b|"
        r"\b(?:image|multimodal|mm) (?:placeholder|token)s?\b[^.\n]{0,60}?"
        r"\b(?:mismatch|does not match|doesn't match|not match|exceed\w*)\b",
        C.INVALID_CONFIG,
        2.8,
        "the request's images (or other inputs) do not fit what the launch allows or the "
        "prompt marks: raise the per-prompt limit, or match placeholders to the inputs",
        name="multimodal-inputs-refused",
    ),
    # --- speculative decoding -----------------------------------------------------------
    rule(
        REFUSED_ONLY + r"\b(?:speculative(?: decoding| config| model| method)?|draft model|"
        r"num_speculative_tokens|spec(?:ulative)?_(?:decode|config|model))\b[^.\n]{0,80}?\b"
        + _CONSTRAINT,
        C.INVALID_CONFIG,
        2.8,
        "speculative decoding is configured in a way this engine or model refuses: change "
        "the draft model or method, its token count, or turn it off",
        name="speculative-refused",
        flags=("--speculative-config", "--speculative-model", "--num-speculative-tokens"),
    ),
    # --- structured output --------------------------------------------------------------
    rule(
        r"\b(?:failed to parse|error parsing|could not parse|invalid|unsupported) "
        r"(?:GBNF )?grammar\b|\b(?:invalid|unsupported) JSON[_ ]?schema\b|"
        r"\bparse: error parsing grammar\b|\bGrammarCompiler\b|"
        r"\bxgrammar\b[^\n]{0,80}?\b(?:error|fail\w*|not supported)\b|"
        r"\bguided_(?:decoding|json|regex|grammar|choice)\w*\b[^.\n]{0,80}?\b" + _CONSTRAINT,
        C.INVALID_CONFIG,
        3,
        "the grammar or JSON schema given for structured output is refused: fix the part "
        "the parser names, or use a guided-decoding backend that supports it",
        name="structured-output-refused",
    ),
    # --- the task: embeddings, pooling, reranking ----------------------------------------
    rule(
        r"\b(?:embeddings?|pooling|rerank(?:ing)?|scoring) (?:is |are )?not (?:enabled|"
        r"activated)\b|\bstart (?:the server )?with --embeddings?\b|"
        r"\bnot an? (?:pooling|embedding|generat\w+) model\b|"
        r"\b(?:--task|--runner|--convert)\b[^.\n]{0,60}?\b(?:must|should|is required|"
        r"not supported|invalid)\b",
        C.INVALID_CONFIG,
        3,
        "the task asked for is not the one the server was started with: start it for that "
        "task (e.g. --embedding, --task embed / --runner pooling) or use the matching endpoint",
        name="task-not-enabled",
    ),
    # --- chat templates and tool calling ---------------------------------------------------
    # the template raised on purpose (``raise_exception``: the messages break its rules) or
    # tool calling without its parser: the request or the launch
    rule(
        r"\bJinja(?:2)? Exception\b|"
        r"\braise_exception\(|\broles must alternate\b|"
        r"\b(?:tool_choice|tool[_ ]call(?:ing)?|auto tool choice)\b[^.\n]{0,80}?"
        r"\b(?:requires?|must|not supported|enable-auto-tool-choice|tool-call-parser)\b",
        C.INVALID_CONFIG,
        3,
        "the chat template (or tool calling) refused the request: pass a template that "
        "fits the messages (--chat-template), make roles alternate, or enable the tool "
        "parser the model needs",
        name="chat-template-refused",
        flags=("--chat-template", "--enable-auto-tool-choice", "--tool-call-parser"),
    ),
    # a template the launch names that the engine does not have (a file path given where a
    # built-in name is read, a file that is not there): the flag
    rule(
        r"\bchat[_ ]template\b[^\n]{0,120}?\b(?:is not a (?:built-?in|registered|known|valid) "
        r"(?:chat )?(?:template )?name|(?:file )?(?:not found|does not exist|no such file))\b",
        C.INVALID_CONFIG,
        4,
        "the chat template the launch names is neither a built-in name nor a file the engine "
        "can read: give an existing file's path (or a name the engine lists)",
        name="chat-template-not-found",
        flags=("--chat-template",),
    ),
    # the template itself does not parse or render under this engine's Jinja (a syntax the
    # renderer lacks, an operator on an undefined value): the model's template, as its
    # tokenizer ships it (the labelling convention: the tokenizer's, so the model's)
    rule(
        # (the error word in a lookahead: the literal prefilter then keys on "jinja")
        r"\bJinja(?:2)?\b(?=[^\n]{0,40}?\berror\b)|"
        r"\bjinja2\.exceptions\.\w+|\bTemplate(?:Syntax|Runtime)?Error\b|"
        r"\bchat[_ ]template\b[^.\n]{0,60}?\b(?:error|failed|invalid|exception)\b|"
        r"\b(?:failed to|unable to|cannot|could not) (?:parse|apply|render|compile) "
        r"(?:the )?(?:jinja )?chat[_ ]template\b",
        C.MODEL_INCOMPATIBLE,
        3,
        "the model's chat template does not parse or render under this engine's template "
        "engine: pass a corrected template (--chat-template FILE), or use an engine release "
        "that supports its syntax",
        name="chat-template-does-not-render",
        flags=("--chat-template",),
    ),
    # --- a message naming a setting beside a constraint -------------------------------------
    rule(
        r"^(?:[\w.]+\.)?(?:AssertionError|ValueError|RuntimeError|Exception|"
        r"ValidationError|ConfigError|ArgumentError)\b:? (?=[^\n]{0,160}?" + _SETTING + r")"
        r"(?=[^\n]{0,200}?\b" + _CONSTRAINT + r"\b)",
        C.INVALID_CONFIG,
        2.4,
        "a setting the code refuses: change the flag or option the message names to a "
        "value it accepts",
        name="exception-names-a-setting",
        case=True,
    ),
    # an assertion comparing a value with a configured limit ("maxBeamWidth <= mMaxBeamWidth",
    # "n_tokens <= n_batch"): a request or setting beyond what the launch allows
    rule(
        _ASSERTION + r"[\w.>()-]{0,60}?\s*(?:<=?|>=?)\s*"
        r"[\w.>()-]{0,20}?(?:max|Max|MAX|limit|Limit|n_batch|n_ubatch|n_ctx|capacity)\w*|"
        # the limit on the left ("n_ubatch >= n_tokens"), or said in words ("is larger than
        # maximum number of draft tokens")
         + _ASSERTION + r"[\w.>()-]{0,40}?"
        r"\b(?:cparams\.|params\.)?(?:n_batch|n_ubatch|n_ctx|n_seq_max)\s*(?:<=?|>=?)|"
        r"\bAssertion failed: [^\n]{0,80}?\b(?:larger|greater|more) than (?:the )?max(?:imum)?\b|"
        # a maximum that must be a multiple of another setting
         + _ASSERTION + r"(?:max|Max|MAX)\w*(?:\.value\(\))?"
        r"\s*%\s*[\w.>()-]{1,40}?\s*==\s*0\b",
        C.INVALID_CONFIG,
        3,
        "a request or setting exceeds a limit the launch fixed (a maximum length, batch, "
        "beam width or context): raise the limit or ask for less",
        name="assertion-against-a-limit",
        case=True,
    ),
    # an assertion that names a setting as empty or unset (a required path or value)
    rule(
        r"\bAssertion failed: [^\n]{0,80}?\b(?:paths?|dir(?:ectory)?|name|file|config)\b"
        r"[^\n]{0,40}?\b(?:is|are) (?:empty|not set|unset|missing)\b",
        C.INVALID_CONFIG,
        3,
        "a required path or setting is empty: set it (in the launch or the model "
        "repository's configuration)",
        name="assertion-setting-empty",
    ),
    # a feature switched on that another setting (or its absence) rules out: "FP8 FMHA cannot
    # be enabled because Context FMHA is not supported", "X cannot be enabled when Y is set"
    # (one refused "except on Ada or Hopper" names the GPU: signals_device reads it)
    rule(
        r"\b\w[\w -]{0,40}? cannot be enabled (?:because|when|while|with|without|unless|if)\b",
        C.INVALID_CONFIG,
        3.5,
        "a feature was switched on that another setting rules out: switch it off, or enable "
        "the setting it needs (the message names both)",
        name="feature-ruled-out-by-another-setting",
    ),
    # the model's own config says one thing and a flag another
    rule(
        r"\bspecified in the model(?:'s)? config\b[^\n]{0,120}?\b(?:does not match|"
        r"doesn't match|differs? from|conflicts? with)\b|"
        r"\b(?:quantization|dtype)\b[^.\n]{0,60}?\bdoes not match\b[^.\n]{0,60}?"
        r"\b(?:argument|flag|the model)\b",
        C.INVALID_CONFIG,
        3.5,
        "a flag contradicts the model's own config (quantization, dtype): drop the flag and "
        "let the config decide, or give the value the config names",
        name="flag-contradicts-model-config",
        flags=("--quantization", "--dtype"),
    ),
)
