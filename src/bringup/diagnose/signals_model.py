"""The ladder's model half: what the model asks for that this engine's code refuses.

A Hugging Face model class named beside a refusal, a refusal "for this model", a field the
model's config lacks, rope scaling newer than the library, a tokenizer class or an Auto
mapping the installed transformers does not have, a checkpoint not quantized as asked, a
missing chat template and remote code not allowed. Those the engine also logs when it merely
works around the limit read only refusals: "... for this model; disabling it" or "using the
default" is no failure (:data:`bringup.diagnose.rule.REFUSED_ONLY`). Assembled by
:mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import REFUSED_ONLY as _REFUSED
from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

# a Hugging Face model class: "Qwen2ForCausalLM", "Gemma3ForConditionalGeneration"
_MODEL_CLASS = (
    r"\b[A-Z]\w*For(?:CausalLM|ConditionalGeneration|SequenceClassification|MaskedLM|"
    r"Seq2SeqLM|TokenClassification|QuestionAnswering|ImageTextToText|TextEncoding|Embedding)\b"
)

RULES: tuple[Rule, ...] = (
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
    rule(
        r"Tokenizer class \w+ does not exist or is not currently imported",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the installed transformers does not know the model's tokenizer class: a newer "
        "transformers, or --trust-remote-code",
        name="tokenizer-class-unknown",
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
        _REFUSED + r"(?:\bUnrecognized keys in `?rope_scaling\b|"
        r"\brope[_ ]?scaling\b`?[^.]{0,60}?\b(?:must be a dictionary|"
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
    # a chat request to a model whose tokenizer brings no chat template: the model's (as a
    # tokenizer the engine cannot use is), whatever flag would work around it
    rule(
        # only the refusals: "no chat template found, using chatml" is the engine carrying on
        _REFUSED + r"(?:chat[_ ]template is not set|must provide a chat template|"
        r"default chat template is no longer allowed|Cannot use chat template|"
        r"(?:does not|doesn't) (?:have|define|contain) a chat[_ ]template)",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the model's tokenizer defines no chat template: pass one (--chat-template FILE) "
        "or use the completions endpoint",
        name="chat-template-missing",
    ),
)
