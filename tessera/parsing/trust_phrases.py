"""The phrase patterns of :func:`tessera.parsing.trust.instruction_like` (see its module doc).

Each entry is ``(anchors, pattern)``: the pattern runs only when the folded text (casefolded,
emphasis marks out, whitespace collapsed) contains one of the literal anchors, which keeps the
check cheap on ordinary text.
"""

from __future__ import annotations

import re

_EN_WHEN = r"(?:previous|prior|preceding|above|earlier|former|foregoing|original|initial)"
_EN_WHAT = r"(?:instructions?|prompts?|directions|directives?|guidelines|rules)"
PHRASES: list[tuple[tuple[str, ...], str]] = [
    # (literal anchors, one of which the folded text must contain; the pattern)
    # English: "ignore (all) previous instructions" and friends
    (
        ("ignore", "disregard", "forget", "discard", "neglect"),
        r"\b(?:ignore|disregard|forget|discard|neglect)\s+"
        r"(?:(?:all|any|every|each|the|your|my|these|those|of)\s+){0,3}"
        rf"{_EN_WHEN}\s+{_EN_WHAT}\b",
    ),
    # a new identity or mode for the model
    (
        ("you are now",),
        r"\byou are now\s+(?:an?\s+|the\s+)?(?:(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|"
        r"unbound|unlimited|new|different)\s+)?"
        r"(?:dan|ai|assistant|chatbot|bot|language model|llm|gpt|chatgpt|model)\b",
    ),
    (
        ("you are now",),
        r"\byou are now (?:in\s+)?(?:dan|jailbreak|jailbroken|god|unrestricted|unfiltered|developer) mode\b",
    ),
    (
        ("you are now",),
        r"\byou are now (?:free|freed|released|liberated|no longer bound) (?:from|of|by)\b",
    ),
    (
        ("from now on",),
        r"\bfrom now on,? you (?:will|must|shall|should|are to) (?:act|respond|answer|behave|pretend|ignore|"
        r"roleplay|role-play|reply|obey)\b",
    ),
    (
        ("pretend", "act as", "roleplay as"),
        r"\b(?:pretend (?:to be|you are)|act as|roleplay as)\s+(?:an?\s+)?"
        r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue)\b",
    ),
    (
        ("do anything now",),
        r"\bdo anything now\b",
    ),
    # the system prompt
    (
        ("prompt", "instructions"),
        r"\b(?:reveal|print|show|output|repeat|leak|display|disclose|dump|expose|recite|tell me|give me|"
        r"write out)\s+"
        r"(?:\w+\s+){0,2}?(?:your|the|my)\s+"
        r"(?:(?:full|entire|exact|complete|original|initial|hidden|secret)\s+)*"
        r"(?:system prompt|initial prompt|hidden prompt|secret prompt|pre-?prompt|hidden instructions|"
        r"secret instructions)\b",
    ),
    (
        ("system prompt", "guardrails", "safety guidelines", "content policy"),
        r"\b(?:ignore|disregard|forget|override|bypass|replace)\s+(?:\w+\s+){0,2}?"
        r"(?:system prompt|guardrails|safety guidelines|content policy)\b",
    ),
    (
        ("system prompt",),
        r"\b(?:new|updated|overriding|replacement) system prompt\b",
    ),
    (
        ("system prompt",),
        r"\bsystem prompt\s*[:=]",
    ),
    # German
    (
        ("ignorier", "vergiss", "vergessen sie", "missacht"),
        r"\b(?:ignorier(?:e|en sie)?|vergiss|vergessen sie|missachte|missachten sie)\s+"
        r"(?:(?:alle|die|deine|ihre|sämtliche|jegliche)\s+){0,3}"
        r"(?:vorherigen|vorigen|bisherigen|obigen|vorangegangenen|früheren|vorhergehenden)\s+"
        r"(?:anweisungen|instruktionen|befehle|vorgaben|regeln)\b",
    ),
    # French
    (
        ("ignore", "oublie", "ne tiens", "ne tenez"),
        r"\b(?:ignore[zr]?|oublie[zr]?|ne (?:tiens|tenez) pas compte d)\s*"
        r"(?:(?:toutes|tous|les|vos|tes|des|es)\s+){0,3}"
        r"(?:instructions|consignes|directives|règles)\s+"
        r"(?:précédentes|antérieures|ci-dessus|passées|initiales)",
    ),
    # Spanish
    (
        ("ignor", "olvid", "omite", "descarta"),
        r"\b(?:ignora|ignore|ignorar|ignoren|olvida|olvide|olvidar|olviden|omite|descarta)\s+"
        r"(?:(?:todas|todos|las|los|tus|sus)\s+){0,3}"
        r"(?:instrucciones|indicaciones|órdenes|reglas|directrices)\s+"
        r"(?:anteriores|previas|precedentes)",
    ),
    # Italian
    (
        ("ignora", "dimentic"),
        r"\b(?:ignora|ignorate|dimentica|dimenticate)\s+(?:(?:tutte|tutti|le|gli|i|tue)\s+){0,3}"
        r"(?:istruzioni|indicazioni|regole)\s+(?:precedenti|di prima)",
    ),
    # Portuguese
    (
        ("ignor", "esque", "desconsidere"),
        r"\b(?:ignore|ignora|esqueça|esqueca|desconsidere)\s+(?:(?:todas|todos|as|os|suas)\s+){0,3}"
        r"(?:instruções|instrucoes|regras|orientações)\s+(?:anteriores|prévias|previas)",
    ),
    # Dutch
    (
        ("negeer", "vergeet"),
        r"\b(?:negeer|vergeet)\s+(?:(?:alle|de|je|jouw)\s+){0,3}(?:vorige|eerdere|voorgaande|bovenstaande)\s+"
        r"(?:instructies|aanwijzingen|opdrachten|regels)\b",
    ),
    # Russian
    (
        ("игнор", "забуд"),
        r"(?:игнорируй|игнорируйте|проигнорируй|забудь|забудьте)\s+(?:(?:все|всё|свои|ваши)\s+){0,2}"
        r"(?:предыдущие|прежние|вышеуказанные|предшествующие)\s+(?:инструкции|указания|команды|правила)",
    ),
    # Chinese, Japanese
    (
        ("忽略", "无视", "忘记", "忽视", "無視"),
        r"(?:忽略|无视|忘记|忽视|無視)(?:掉)?(?:所有|全部)?(?:的)?(?:之前|以前|先前|上面|上述|前面)(?:的)?(?:所有|全部)?(?:的)?"
        r"(?:指令|指示|说明|提示|规则)",
    ),
    (
        ("無視", "忘れ"),
        r"(?:以前|前|上記)の(?:すべての)?(?:指示|命令|指令)を(?:すべて)?(?:無視|忘れ)",
    ),
    (
        ("[inst]", "[/inst]"),
        r"\[/?inst\]",
    ),
    (
        ("<<sys>>", "<</sys>>"),
        r"<</?sys>>",
    ),
]
PATTERNS = [(anchors, re.compile(p)) for anchors, p in PHRASES]
MARKER = re.compile(r"<\|[a-z][a-z0-9_]{1,30}\|>|<(?:start|end)_of_turn>")
"""Chat-template markers, matched before ``_`` is folded to a space."""
