"""The ladder's loader half: a model loader naming the part of the checkpoint it cannot place.

When an engine reads a checkpoint, the line that fails names the piece it met: a parameter
name its model code has no slot for, an architecture or model type its loader has no
mapping for (GGUF loaders name the ``general.architecture`` string, not a class), a
multimodal projector type of an ``mmproj`` file, a tensor count that differs from what the
architecture expects, a tensor a converter cannot map, a capability (tools) the model's
template does not declare. Each is the model against this version of the code, not a crash
and not a missing file:

- ``KeyError: 'model.layers.0.mlp.down_proj.weight_scale'`` (a dotted parameter name as the
  key): the weight loader looked the name up in the model's parameters and found no slot;
- ``Architecture gemma2 not supported``, ``Unknown gguf model_type: x``, a serde ``unknown
  variant`` while parsing the model's config: the loader has no mapping for the model;
- ``unknown projector type``, a CLIP/projector model that fails to load;
- ``wrong number of tensors`` / ``incorrect number of tensors``, ``Can not map tensor``;
- ``<model> does not support tools``.

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

_NEWER = (
    "this engine version has no mapping for the model's {part}: a release that supports "
    "this model, or a checkpoint of an architecture it lists"
)

# an architecture name that is a GPU target's or a CPU's, not a model's
_NOT_A_PROCESSOR = r"(?!sm_?\d|gfx\d|compute_\d|x86|aarch|arm|amd64|i[36]86|ppc|riscv|s390)"

# the innermost frame above a KeyError (within three lines) is not a loading function
_NOT_RAISED_OUTSIDE_A_LOADER = (
    r"\A(?![\s\S]*?, in (?!\w*load\w*\b)[\w<>]+[ \t]*\n(?:[^\n]*\n){0,3}?[^\n]*KeyError: )"
)

RULES: tuple[Rule, ...] = (
    # a dotted parameter name as a KeyError's key: the weight loader's lookup of a
    # checkpoint tensor in the model's parameters (``params_dict[name]``) found no slot
    rule(
        r"\bKeyError: ?['\"](?:[\w-]+\.){1,12}[\w-]*(?:weight|bias|scales?|scale_inv|"
        r"weight_scale\w*|input_scale|qweight|qzeros|g_idx|absmax|quant_map|zeros|"
        r"lora_[AB]\w*|embed_tokens\w*|norm)['\"]",
        C.MODEL_INCOMPATIBLE,
        4,
        "the checkpoint holds a weight this model code has no parameter for (another "
        "layout, quantization or architecture variant): a release that loads this "
        "checkpoint, or its plain Hugging Face safetensors form",
        name="weight-key-has-no-parameter",
        # unless the traceback shows it raised in a function that loads nothing: there
        # the frame decides (a request handler's lookup is a crash)
        also=_NOT_RAISED_OUTSIDE_A_LOADER,
    ),
    # the same lookup told in a report's words ("a KeyError during load_weights", "KeyError
    # on missing parameter ..."): the same cause, less sure without the key itself
    rule(
        r"\bKeyError\b[^\n]{0,80}?\b(?:load_weights|weights?|parameters?)\b",
        C.MODEL_INCOMPATIBLE,
        3,
        "the checkpoint holds a weight this model code has no parameter for: a release "
        "that loads this checkpoint, or its plain Hugging Face safetensors form",
        name="keyerror-on-a-weight-reported",
    ),
    # a loader refusing an architecture by its name (GGUF's ``general.architecture``):
    # the noun alone is a GPU's too, so the name must not be a GPU target's
    rule(
        r"\barchitecture:? ['\"`]?" + _NOT_A_PROCESSOR + r"[A-Za-z][\w.-]*['\"`]? "
        r"(?:is )?not (?:yet )?supported\b|"
        r"\bunknown (?:gguf |GGUF )?model[_ ]type\b|"
        r"\bCould not parse config\b[^\n]{0,40}?\bunknown variant\b",
        C.MODEL_INCOMPATIBLE,
        4.5,
        _NEWER.format(part="architecture"),
        name="loader-architecture-unknown",
    ),
    # a multimodal projector (mmproj) of a type this build does not implement
    rule(
        r"\bunknown projector type\b|\bprojector type [\w'\"]+ (?:is )?not supported\b",
        C.MODEL_INCOMPATIBLE,
        4.5,
        _NEWER.format(part="image projector (mmproj)"),
        name="projector-type-unknown",
    ),
    # the projector file itself failed: usually the same cause, as a weaker signal
    rule(
        r"\bfailed to load (?:the )?(?:CLIP|mmproj|projector|vision) model\b",
        C.MODEL_INCOMPATIBLE,
        2.5,
        "the image projector (mmproj) file does not load in this build: a release that "
        "supports the model's projector, or a projector converted for it",
        name="projector-model-not-loadable",
    ),
    # the loader expected another tensor count for the architecture (a newer variant of
    # it, extra rope factors) or a converter met a tensor it does not know
    rule(
        r"\b(?:wrong|incorrect|unexpected) number of tensors\b|\btensor[- ]count mismatch\b|"
        r"\bcan ?not map tensor\b|\bcannot map tensor\b",
        C.MODEL_INCOMPATIBLE,
        4,
        "the file's tensors are not those this version expects for the architecture: "
        "a newer engine, or a file converted by the tool this version pairs with",
        name="tensor-set-differs",
    ),
    # the model's rope scaling in a form the code does not read (a key it requires, an
    # assertion on one): a config written for a newer version
    rule(
        r"\brope_scaling\b[^\n]{0,40}?\b(?:should|must) (?:have|be|contain)\b|"
        r"\bassert ['\"]\w+['\"] in (?:self\.)?(?:\w+\.)?rope_scaling\b",
        C.MODEL_INCOMPATIBLE,
        3.9,
        "the model's rope_scaling is in a form this engine version does not read: a "
        "release that supports the model's rope type",
        name="rope-scaling-form-unknown",
    ),
    # a chat request with tools to a model whose template declares none
    rule(
        r"[\w./:-]+ does not support (?:tools|tool calling|function calling)\b",
        C.MODEL_INCOMPATIBLE,
        4,
        "the model's template declares no tool support: a model (or a template) that "
        "supports tools, or the request without them",
        name="model-lacks-tools",
    ),
)
