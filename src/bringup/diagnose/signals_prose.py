"""The ladder's last rung: the reporter's own words, when the log shows no engine signal.

Many reports are prose around a partial log, or prose only ("it just hangs after loading",
"outputs gibberish", "the GPU is not detected", "显存不足"). The words name the symptom a
person saw, not its cause, so every rule here is a guess: its weight stays below the
classifier's ``_CAUSE`` (2), which caps its confidence under 0.5, and any engine line that
names a cause outweighs it. Word edges are written ``(?<![A-Za-z])`` rather than ``\\b``
where text of other scripts may touch the word ("报错out of memory": Python counts CJK as
word characters, so ``\\b`` finds no edge there).

- a hang: hangs, stuck, freezes, stalls, deadlock, stops responding, no response, nothing
  happens, never returns (or returned), waits forever, 挂起;
- wrong text: gibberish, garbage, nonsense, repetitive, incorrect (however qualified:
  "semantically incorrect"), bad, unreadable, meaningless or repeated outputs, random characters, an
  empty response, output something corrupts, an answer of punctuation only ("'???'");
- a crash: crashes, segfaults, dies, a blue screen, exits without an error, a signal named
  (SIGABRT); a crash the report rules out ("not a crash") is not one;
- no GPU: not detected, falls back to the CPU, CPU-only mode;
- memory: "out of memory" touching other scripts, Chinese for VRAM (显存) or RAM (内存)
  running short, and a process killed when its memory crossed a limit, or seen "getting
  killed" with no signal named (the host's).

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, not_advised, rule
from bringup.verdict import Category as C

_L, _R = r"(?<![A-Za-z])", r"(?![A-Za-z])"

RULES: tuple[Rule, ...] = (
    rule(
        r"\b(?:hangs?|hanging|hung)\b(?! up\b)|\bstuck(?:s|ed)?\b|\bfreez(?:es|ing)\b|\bdeadlock|"
        r"\b(?:no|without) (?:any )?(?:response|log print)\b|"
        r"\bstops? (?:responding|returning|generating)\b|\bnot responding\b|"
        r"\btime(?:s|d)? out indefinitely\b|\binfinite(?:ly)? loading\b|"
        r"\bwaiting (?:forever|indefinitely)\b|\bnever (?:reaches|returns|finishes)\b|"
        r"\b(?:rotating|spinning) (?:cursor|wheel|icon)\b|\bkeeps? (?:spinning|loading)\b|"
        r"\bloads? forever\b|\bstall(?:s|ed|ing)?\b|\bfrozen\b|\bnothing happens\b|"
        r"\bno (?:further )?progress\b|\bnot progressing\b|\btak(?:es|ing) forever\b|"
        r"\b(?:does not|doesn't|never) (?:return|respond|finish|complete)s?\b|"
        # the same in the past tense, and "respond" misspelt as its noun
        r"\bnever (?:returned|responded|finished|completed|came back)\b|"
        r"\b(?:does not|doesn't|did not|didn't) (?:give (?:any |a )?)?response\b|"
        r"\b(?:keeps?|kept) waiting\b|\bwait(?:s|ing)? forever\b|"
        r"\bsuddenly stops\b|\bwon't resume\b|\btook too long\b|"
        r"\btardó demasiado\b|"
        r"卡住|卡死|无响应|挂起|没有响应|一直等待",
        C.STARTUP_TIMEOUT_OR_HANG,
        1.8,
        "the report says the engine stopped making progress: give the log's last lines, "
        "raise the start timeout if it is only slow",
        name="reporter-says-hang",
    ),
    rule(
        r"\b(?:gibberish|jibberish|garbled|nonsensical|incoherent|unsense)\b|"
        r"\b(?:garbage|nonsense) (?:output|text|data|answers?)\b|"
        r"\b(?:generates?|outputs?|returns?|texting|produces?) (?:\w+ )?(?:garbage|nonsense)\b|"
        r"\b(?:outputs?|results?|answers?|responses?) (?:is |are )?(?:incorrect|wrong|bad|"
        r"strange|weird|corrupted)\b|\b(?:incorrect|wrong|bad|strange|weird) "
        r"(?:outputs?|results?|answers?|text)\b|\brepetit(?:ive|ion)\b|"
        r"\brepeat(?:s|ing)? (?:one|a single) (?:char|character|word|token)|乱码|"
        r"\brepeated (?:answers?|outputs?|responses?|text|sentences?|tokens)\b|"
        r"\b(?:outputs?|responses?|answers?|repl(?:y|ies)|results?) (?:is|are|was|were) "
        r"(?:all |only |just |pure )?(?:nonsense|garbage|random|exclamation marks?)\b|"
        r"\b(?:outputs?|responses?|answers?) (?:is|are|was|were) all `?[!?@#.]{3,}|"
        r"\b(?:meaningless|unreadable) (?:text|outputs?|answers?|responses?|results?)\b|"
        r"\b(?:outputs?|responses?|answers?|results?|text) (?:is |are |was |were )?"
        r"(?:completely |totally )?(?:meaningless|unreadable)\b|"
        r"\brandom (?:characters|tokens|symbols|words)\b|"
        # the subject and its verdict a few words apart ("the output of the quantized model
        # is always nonsense", "the generation on this GPU is not correct")
        r"\b(?:outputs?|generations?|completions?|responses?|answers?)\b[^.\n]{0,40}?\b(?:is|are|"
        r"was|were) (?:always |often |sometimes |still |clearly )?(?:\w+ly )?(?:nonsense|garbage|"
        r"gibberish|not correct|incorrect)\b|"
        # something that spoils the text ("the FP8 KV cache corrupts output", "produces
        # corrupted, non-terminating output")
        r"\bcorrupt(?:s|ed|ing)? (?:the |its |their )?(?:\w+ )?(?:outputs?|generations?|"
        r"completions?|responses?|answers?|text)\b|"
        r"\b(?:produces?|generates?|returns?|gives?|outputs?) (?:\w+ )?corrupted\b[^.\n]{0,40}?"
        r"\b(?:outputs?|text|responses?|answers?|tokens)\b|"
        # an answer of punctuation only, described ("produces '???????'")
        r"\b(?:produces?|generates?|returns?|outputs?|gives?|prints?|responds? with|replies "
        r"with) (?:only |just )?['\"`‘“]?[?!#�]{3,}|"
        r"\b(?:returns?|gives?|produces?|generates?) (?:an? |only )?(?:empty|blank) "
        r"(?:responses?|outputs?|strings?|content|text|answers?)\b",
        C.GARBAGE_OUTPUT,
        1.8,
        name="reporter-says-wrong-text",
    ),
    rule(
        # a crash the report rules out ("not a crash", "no crash") is not one
        # ("it does not crash if ..." says it crashes otherwise)
        r"^(?!(?i:.*(?:\b(?:not|never)\b(?: \w+){0,5} (?:an?|any) crash\b|\bno crash(?:es)?\b|"
        r"\bwithout (?:an? |any )?crash))).*?"
        r"(?:\bcrash(?:es|ed|ing)?\b|\bcrush(?:es|ed)?\b|\bsegfaults?\b|\bblue screen\b|"
        r"\bBSOD\b|\bexits? (?:without|with no) (?:any )?(?:error|message)|"
        r"\bsilently exits?\b|\bthe process (?:exits|dies|died)\b|\bSIG(?:ABRT|BUS)\b)",
        C.RUNTIME_CRASH,
        1.6,
        name="reporter-says-crash",
    ),
    rule(
        r"\b(?:not|n't|unable to|fails? to) (?:detect|recogni[sz]e)s? (?:my |the |any |a )?"
        r"(?:NVIDIA |Nvdia |AMD )?GPUs?\b|"
        r"\bGPUs? (?:is |are |was )?not (?:detected|found|recogni[sz]ed|visible)\b|"
        r"\bfalls? back to (?:the )?CPU\b|\bCPU-only mode\b|"
        r"\bno (?:compatible |NVIDIA |CUDA )?GPUs? (?:were |was )?(?:detected|discovered)",
        C.MISSING_DEPENDENCY,
        1.8,
        "the engine did not find the GPU: check the driver and its libraries are installed "
        "and visible to the engine (container runtime, device plugin)",
        name="reporter-says-no-gpu",
    ),
    rule(
        r"\bports? (?:conflicts?|collisions?|clash(?:es)?)\b|"
        r"\bports? (?:is |are |was |were )?already (?:in use|taken|used|occupied|bound)\b|"
        r"端口(?:被占用|冲突|已被占用)",
        C.PORT_IN_USE,
        1.9,
        "the report says a port was already taken: free it or give the engine another one "
        "(its HTTP port, and the internal ports it opens for its workers)",
        name="reporter-says-port-taken",
    ),
    rule(
        not_advised(r"out of memory")
        + r"(?:"
        + _L
        + r"out of memory"
        + _R
        + r"|显存不足|显存不够|爆显存|显存溢出)",
        C.OOM_GPU,
        1.9,
        name="reporter-says-vram-ran-out",
    ),
    rule(
        r"内存不足|\bkilled by (?:Kubernetes|k8s|the kernel|the OOM|docker)\b|"
        # a build or conversion the reporter saw killed, no signal named: most often the
        # kernel's OOM killer
        r"\b(?:program|process|build|conversion|job|script)\b[^.\n]{0,20}?\bkilled\b|"
        r"\b(?:it|build|process|conversion) (?:gets|got|getting) killed\b|"
        r"\bmemory limit\b[^.\n]{0,40}\bkilled\b|"
        r"\bkilled (?:due to|because of|for) (?:high |excessive |too much )?(?:memory|RAM)\b",
        C.OOM_HOST,
        1.9,
        name="reporter-says-host-memory-limit",
    ),
)
