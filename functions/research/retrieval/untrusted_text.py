"""Retrieved text is data: each sentence is judged for text addressed to the reader or to an assistant.

A sentence of a paper states, defines or reports. One that speaks to whoever reads it (a person or a
model) is not evidence of anything, whatever it asks: it is never used as evidence, never a claim, never
a theme and never streamed. The judgement is per sentence (a clause, in fact: `;` and `:` end one too),
so an instruction next to a caught one is judged on its own, and the text around it stays usable.

Before judging, a sentence is folded to a skeleton: NFKC, invisible and format characters (zero-width,
bidi controls, soft hyphens, variation selectors, tag characters) removed, TR39 confusables mapped to
their Latin prototypes (the Unicode data shipped by `confusable-homoglyphs`), case and accents dropped,
digits inside words read as the letters they imitate, and `i`/`l` merged (the TR39 prototype of `I`
is `l`). Letter-spaced (`i g n o r e`) and punctuation-split (`ig.no-re`) words are joined in a second
reading. Lexicons go through the same fold, so they match whatever disguise the text wears.

Signals are classes, not phrases, and most are independent of the language:
- role markers (`System:`, `### Instruction`, chat-template tokens) in any of the listed languages;
- an order to drop what came before (ignore/forget/disregard + instructions/everything above, in the
  major European languages, Russian and Chinese);
- a request for credentials (password, token, API key, login, bank details... in those languages)
  together with a request verb, the second person or a reader as subject;
- a model, assistant or summariser addressed (by a vocative, the second person, a modal order or an
  order about this document);
- an order to the reader: a sentence that opens with an action verb from the reader-directed list
  (send, visit, click, reply, tell, mark...), or the second person with a modal order; the scientific
  imperatives of papers ("see", "let", "note", "consider", "assume", "compare") are not on that list;
- a link or e-mail address that is not the source's own (host or DOI of its metadata).
One strong signal, or two weak ones (the second person, "please", an addressee word), make a sentence
hostile; a sentence right after a hostile one is hostile on one weak signal.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from typing import Any
from urllib.parse import urlsplit

from functions.research.retrieval import directive_intents

ROLE_MARKER = "role_marker"
OVERRIDE = "override_instruction"
CREDENTIALS = "credential_request"
ASSISTANT = "assistant_addressed"
READER_ORDER = "reader_order"
LINK = "foreign_link"
HANDLING = "handling_directive"  # about how this document must be summarised, cited, ranked...
ANNOUNCING = "announcing_neighbour"  # announces a step that a caught sentence carries out
CLOSING = "closing_neighbour"  # the formula that closes a caught block ("That is all.")
STRONG = frozenset(
    {ROLE_MARKER, OVERRIDE, CREDENTIALS, ASSISTANT, READER_ORDER, LINK, HANDLING, ANNOUNCING, CLOSING}
)
ADDRESSED = STRONG - {LINK}  # the classes that speak to the reader or a model
_HANDLING_SIGNALS = frozenset({HANDLING, ANNOUNCING, CLOSING})
SECOND_PERSON, PLEASE, ADDRESSEE = "second_person", "please", "addressee"

# A source with at least this many hostile sentences (links aside), or this share of its sentences,
# is hostile as a whole: nothing of it is used.
HOSTILE_SOURCE_MIN_SENTENCES = 3
HOSTILE_SOURCE_MIN_SHARE = 0.25

# Default-ignorable and format characters that hide inside words (zero-width, bidi, soft hyphen,
# combining grapheme joiner, Hangul fillers, Mongolian selectors, variation selectors, tags).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000e0000-\U000e0fff]"
)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
_CJK = 0x2E80
_ET_AL = re.compile(r"\bet al\b")
_MIXED_TOKEN = re.compile(r"\b(?=\w*[a-z])(?=\w*[0-9@$])[\w@$]+")
_SPACED_LETTERS = re.compile(r"\b(?:\w ){2,}\w\b")
_INNER_PUNCT = re.compile("(?<=\\w)[.\\-_\u00b7*'\u2019](?=\\w)")


@cache
def _prototypes() -> dict[str, str]:
    """Non-ASCII characters and the ASCII prototype they are confusable with (TR39 data)."""
    from confusable_homoglyphs.confusables import confusables_data  # type: ignore[import-untyped]

    table: dict[str, str] = {}
    for char, homoglyphs in confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        for entry in homoglyphs:
            target = str(entry.get("c", "")).replace("\u200e", "")
            if target and target.isascii() and target.strip() and len(target) <= 2:
                table[char] = target
                break
    return table


def _map_confusables(text: str) -> str:
    table = _prototypes()
    return "".join(table.get(char, char) for char in text) if not text.isascii() else text


def fold(text: str, *, merged: bool = False) -> str:
    """The skeleton a sentence is judged by (see the module's docstring); `merged` also reads `l` as
    `i` and digits inside words as letters (the ASCII look-alikes)."""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    text = _map_confusables(text)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = _map_confusables(text).casefold()
    text = _ET_AL.sub("et_al", text)
    if merged:
        text = _MIXED_TOKEN.sub(lambda m: m.group(0).translate(_LEET), text).replace("l", "i")
    return " ".join(text.split())


def _joined(folded: str) -> str:
    """A second reading: letter-spaced words and punctuation-split words joined."""
    text = _SPACED_LETTERS.sub(lambda m: m.group(0).replace(" ", ""), folded)
    return _INNER_PUNCT.sub("", text)


def _words(*items: str, merged: bool) -> str:
    """An alternation of lexicon entries, folded like the text ("*" ends a prefix), as a trie so that a
    long lexicon costs little per position."""
    latin: list[tuple[str, str]] = []
    other: list[tuple[str, str]] = []
    for item in items:
        for word in item.split("|"):
            word = word.strip()
            if word:
                core = fold(word.rstrip("*"), merged=merged)
                ending = r"\w*" if word.endswith("*") else r"\b"
                # no spaces between words in CJK text, so no word boundaries either
                (other if ord(word[0]) >= _CJK else latin).append(
                    (core, "" if ord(word[0]) >= _CJK else ending)
                )
    parts = []
    if latin:
        parts.append(r"(?<!\w)" + _trie(latin))
    if other:
        parts.append(_trie(other))
    return "(?:" + "|".join(parts) + ")"


def _trie(entries: list[tuple[str, str]]) -> str:
    root: dict[str, Any] = {}
    for text, ending in entries:
        node = root
        for char in text:
            node = node.setdefault(char, {})
        node.setdefault("", set()).add(ending)
    return _trie_pattern(root)


def _trie_pattern(node: dict[str, Any]) -> str:
    branches: list[str] = []
    for char in sorted(key for key in node if key):
        piece = r"\s+" if char == " " else re.escape(char)
        branches.append(piece + _trie_pattern(node[char]))
    endings: list[str] = sorted(node.get("", set()), key=len, reverse=True)
    if r"\w*" in endings:
        endings = [r"\w*"]  # a prefix entry covers the whole word that ends here
    alternatives = branches + endings
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"


# ---- lexicons (folded at import; written plainly here) ----------------------------------------------
_ROLES = (
    "system|assistant|user|human|developer|instruction|instructions|prompt|"
    "sistema|systeme|système|asistente|assistente|assistent|benutzer|nutzer|utilisateur|usuario|utente|"
    "gebruiker|systeem|system prompt|anweisung|consigne|instrucción|istruzione|instrução|система|"
    "ассистент|пользователь|系统|助手|用户"
)
_DROP_VERBS = (
    "ignore|ignoring|disregard*|forget|override|overrule|bypass|skip|abandon|discard|drop|neglect|"
    "pay no attention to|take no notice of|set aside|never mind|no longer follow|stop following|"
    "ignorier*|vergiss|vergessen|missacht*|übergeh*|verwirf|ignorez|ignorer|oubli*|négligez|"
    "olvid*|ignora|ignoren|ignore|omite|omita|dimentic*|trascura|esquec*|esqueç*|desconsider*|"
    "negeer|vergeet|zignoruj|zapomnij|pomiń|игнорир*|забуд*|не обращай*|ignorera|glöm|glem|ignorér|"
    "unohda|ohita|ignoruj*|zapomeň*|ignoreer|αγνόησ*|yok say|unut|忽略|无视|忘记|無視"
)
# What an order to drop names: instructions and the like, or everything before (never "previous work").
_DROP_OBJECTS = (
    "instruction*|direction*|guideline*|rules above|previous rules|prior rules|your rules|prompt*|"
    "command*|guidance|constraint*|polic*|"
    "everything|anything|all of the above|the above|all above|everything above|context above|"
    "what came before|what you were told|system message*|"
    "anweisung*|vorgabe*|befehl*|anleitung*|regeln|alles|consigne*|règles|tout ce qui|"
    "instrucci*|indicacion*|reglas|todo lo anterior|istruzion*|indicazion*|regole|tutto|instruç*|"
    "instruc*|regras|tudo|instructie*|aanwijzing*|polecen*|instrukcj*|wszystko|инструкци*|"
    "указани*|правила|всё|instruktion*|instruks*|ohje*|pokyn*|instrukc*|talimat*|οδηγί*|"
    "指令|指示|说明|提示"
)
_CREDENTIALS = (
    "password*|passcode*|passphrase*|passwd|pin code|pin number|token*|api key*|apikey|api-key|"
    "secret key*|access key*|private key*|credential*|login*|log-in|username*|user name|otp|"
    "one-time code|one time code|one-time password|verification code|2fa code|mfa code|security code|"
    "bank details|bank account|credit card*|card number|iban|seed phrase|recovery phrase|ssh key*|"
    "session cookie*|wallet seed|passwort*|kennwort*|zugangsdaten|anmeldedaten|api-schlüssel|"
    "mot de passe|mots de passe|identifiants de connexion|clé api|clé d'api|contraseña*|credencial*|clave de api|clave api|"
    "senha*|chave de api|chave api|wachtwoord*|inloggegevens|hasło|hasła|hasl*|klucz api|klucza api|dane logowania|пароль*|"
    "токен*|ключ api|api ключ|lösenord*|inloggning*|adgangskode*|salasana*|heslo|hesla|şifre*|密码|令牌|密钥"
)
_REQUEST_VERBS = (
    "send|sending|share|paste|enter|provide|submit|forward|type|reply|email|e-mail|mail|upload|"
    "log in|login|sign in|verify|confirm|give|hand over|disclose|reveal|post|input|fill in|text|"
    "sende*|schick*|teil*|eingeben|gib|geben|übermittel*|envoy*|partag*|saisi*|fourni*|entrez|"
    "donnez|communiquez|envía*|envia*|comparta*|introduzca|ingrese|proporcione|invia*|condividi|"
    "inserisci|fornisci|compartilh*|digite|informe|stuur|deel|voer|geef|wyślij|podaj|wpisz|"
    "udostępnij|отправ*|пришли*|введи*|сообщи*|укажи*|skicka|dela|ange|send|oppgi|lähetä|anna|"
    "pošlete|zadejte|gönder|girin|发送|提供|输入"
)
_SECOND_PERSON = (
    "you|your|yours|yourself|yourselves|dich|dein*|euch|euer|eure*|vous|votre|vos|toi|"
    "usted|ustedes|vosotros|vuestr*|tuyo|tuya|voi|vostr*|tuo|tua|tuoi|você|vocês|voce|voces|teu|tua|"
    "jij|jou|jouw|uw|ciebie|tobie|twój|twoj*|wasz*|ты|тебя|тебе|твой|твоя|твои|вы|вас|вам|ваш*|"
    "ditt|dina|dere|sinä|sinun|sinua|teidän|váš|vaše|tvůj|siz|sizin|εσύ|εσείς|"
    "你|您|あなた"
)
# German and Dutch formal imperatives put the pronoun after the verb: "Ignorieren Sie ...".
_FORMAL_IMPERATIVE = re.compile(r"^(?:bitte\s+)?\w+en\s+sie\b|^(?:ga|neem|stuur|geef|voer)\s+u\b")
_PLEASE = (
    "please|kindly|pls|bitte|veuillez|merci de|s'il vous plait|por favor|per favore|prego|alstublieft|"
    "graag|proszę|prosze|пожалуйста|prosím|lütfen|ole hyvä|vänligen|请|請"
)
_ADDRESSEES = (
    "ai|llm|llms|chatbot*|chat bot|assistant*|language model*|ai model*|ai system*|ai agent*|"
    "ai tool*|summariser*|summarizer*|summarising tool*|summarizing tool*|automated reader*|"
    "automated system*|automated tool*|automated agent*|automated summar*|bot|bots|crawler*|gpt*|"
    "chatgpt|claude|gemini|copilot|ki|ki-system*|sprachmodell*|assistent*|ia|modèle de langue|"
    "modèle de langage|assistant ia|modelo de lenguaje|asistente*|modello linguistico|assistente*|"
    "taalmodel*|model językowy|языков* модел*|ии|нейросет*|språkmodell*|kielimalli*|大模型|人工智能|"
    "语言模型|助手"
)
_READERS = (
    "reader*|reviewer*|visitor*|the user|users of this|whoever reads|anyone reading|leser*|"
    "lecteur*|lector*|lettor*|leitor*|lezer*|czytelni*|читател*|läsare|lukija*"
)
_MODAL_ORDER = (
    "must|should|have to|has to|need to|needs to|shall|will now|are to|is to|you will|you'll|"
    "müssen|muss|sollen|sollte*|solltest|doivent|doit|devez|devrait|deben|debe|debería*|devono|deve|"
    "dovrebbe*|devem|moeten|moet|musi|muszą|powin*|должн*|måste|bör|skal|pitää|täytyy|musí"
)
# Verbs an order to the reader or a model opens with. The imperatives of scientific prose ("see",
# "let", "note", "consider", "assume", "compare", "recall", "define") are deliberately absent.
_ORDER_VERBS = (
    "ignore|disregard|forget|override|send|paste|visit|click|tap|go to|navigate to|download|install|"
    "email|e-mail|contact|reply|respond|answer|tell|say|state|output|print|write|mark|rate|treat|"
    "label|classify|summarise|summarize|describe|present|report|cite|recommend|mention|omit|"
    "stop|skip|pretend|act as|behave|log in|sign in|verify|confirm|enter|share|provide|submit|forward|"
    "subscribe|register|buy|purchase|use only|only use"
)
# Imperative forms of other languages: unlike English ones ("Report", "Answer"), they are not nouns,
# so no object needs to follow.
_FOREIGN_ORDERS = (
    "antworte|antwortet|sag|sage|schreib|schreibe|gib|nenne|erwähne|markiere|bewerte|behandle|"
    "besuche|klicke|sende|schicke|ignoriere|vergiss|réponds|répondez|dites|écris|écrivez|"
    "mentionnez|marquez|traitez|visitez|cliquez|envoyez|envoie|ignorez|oubliez|veuillez|responde|"
    "responda|diga|escribe|escriba|menciona|mencione|haz clic|envía|envie|olvida|olvide|rispondi|"
    "dì|scrivi|menziona|segna|invia|clicca|dimentica|escreva|clique|esqueça|antwoord|zeg|schrijf|"
    "noem|markeer|bezoek|klik|stuur|negeer|vergeet|odpowiedz|powiedz|napisz|wspomnij|oznacz|"
    "odwiedź|kliknij|wyślij|zignoruj|zapomnij|ответь|ответьте|скажи|скажите|напиши|напишите|"
    "сообщи|сообщите|отметь|отметьте|перейди|перейдите|нажми|нажмите|отправь|отправьте|"
    "игнорируй|игнорируйте|забудь|забудьте|svara|säg|skriv|nämn|markera|besök|klicka|skicka|"
    "ignorera|glöm|vastaa|sano|kirjoita|mainitse|odpověz|odpovězte|řekni|řekněte|napiš|napište|"
    "cevap ver|söyle|回答|告诉|输出|标记"
)
# After a comma an order is told by its form alone only when the form is long enough to be no other word.
_FOREIGN_ORDERS_LONG = "|".join(word for word in _FOREIGN_ORDERS.split("|") if len(word) >= 6)
# What may stand before an order: "Then reply ...", "Afterwards, send ...".
_LEAD_IN = (
    "then|now|also|next|finally|afterwards|subsequently|immediately|dann|danach|puis|ensuite|luego|"
    "después|poi|dopo|daarna|potem|затем|потом|sedan|sitten"
)
# Openings that order whatever verb follows.
_ORDER_PREFIXES = (
    "never|always|do not|don't|dont|make sure|be sure|remember to|from now on|nicht vergessen|"
    "vergiss nicht|n'oubliez pas|ne mentionnez|no menciones|no mencione|non menzionare|não mencione|"
    "noem niet|nie wspominaj|не упоминай*|nämn inte|älä mainitse"
)
_ORDER_OBJECTS = (
    "the|a|an|all|any|every|each|this|these|that|those|only|your|my|me|us|them|it|our|here|now|"
    "to|on|at|with|that|no|nothing|everything|every|le|la|les|un|une|tous|toutes|ce|cette|el|los|"
    "las|todo|todos|este|esta|il|lo|gli|tutti|tutte|questo|questa|o|os|as|todos|esse|essa|de|het|"
    "een|alle|dit|deze|der|die|das|den|dem|ein|eine|alles|nur|keine|kein|nicht|je|que|che|dass|"
    "daß|och|att|och|en|ett|det|den|alla|only|ausschließlich|únicamente|unicamente|solo|solamente"
)
# What a model is told to do with its answer ("summarisers must call it ...", "assistants should rate ...").
_OUTPUT_VERBS = (
    "call|describe|report|say|state|present|rate|mark|label|list|cite|recommend|mention|omit|"
    "summarise|summarize|answer|respond|reply|write|output|tell|treat|classify|rank|refer to|"
    "conclude|declare|portray|characteri*|frame|highlight|emphasi*|ignore|hide|suppress|"
    "bezeichnen|nennen|beschreiben|antworten|décrire|qualifier|répondre|describir|responder|"
    "descrivere|rispondere|beschrijven|noemen|opisać|описать|назвать"
)
# Orders in the passive: "are (hereby) instructed to" (a pattern over folded text, not a lexicon).
_TOLD = (
    r"\b(?:are|is|am|be)\s+(?:\w+\s+)?(?:required|instructed|asked|requested|expected|directed|ordered|"
    r"told|invited)\s+to\b|\b(?:sind|ist) angewiesen\b|\bsont (?:pries|tenus)\b|\bestan obligados\b"
)
_SELF_REFERENCE = (
    "this document|this paper|this article|this study|this work|this text|this source|this page|"
    "this paragraph|this section|this passage|this manuscript|this preprint|this report|this submission|the findings below|the text above|the following|"
    "dieses dokument|diese arbeit|diese studie|diesen text|ce document|cet article|cette étude|"
    "este documento|este artículo|este estudio|questo documento|questo articolo|questo studio|"
    "este artigo|este estudo|dit document|dit artikel|deze studie|ten dokument|ten artykuł|"
    "этот документ|эта статья|это исследование|detta dokument|denna artikel|denna studie"
)

_ROLE_LITERALS = (
    r"#{2,}\s*(?:instruction|instructions|system|response|input|prompt|task)\b"
    r"|<\|?\s*/?\s*(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id)\s*\|?>"
    r"|\[/?\s*(?:inst|sys|system)\s*\]|<<\s*/?\s*sys\s*>>|\"role\"\s*:\s*\"(?:system|assistant|user)\""
)
_NOTE_WORDS = "note|message|notice|attention|reminder|instruction|hinweis|remarque|nota|aviso|avviso|let op|uwaga|внимание|obs"
_FOR_WORDS = "to|for|an|für|pour|para|per|voor|dla|для|till|dear|liebe|lieber|cher|chère|querido|caro"
_ANY_WORDS = "any|all|every|the|a|an|jede|jeder|jedes|alle|tout|tous|todo|todos|ogni|elke|każdy|любой|все"
_IF_WORDS = "if|when|as|since|wenn|falls|si|se|als|jeśli|если|om|jos"
_YOU_WORDS = "you|du|sie|vous|tu|usted|voi|você|jij|ty|вы|ты"
_ARE_WORDS = "are|is|bist|sind|êtes|es|eres|sei|siete|é|bent|jesteś|являетесь|är|olet"
_ARTICLES = "a|an|ein|eine|un|une|uno|una|um|uma|een"


@dataclass(frozen=True)
class _Patterns:
    role: re.Pattern[str]
    drop: re.Pattern[str]
    credentials: re.Pattern[str]
    request: re.Pattern[str]
    opening_order: re.Pattern[str]
    foreign_order: re.Pattern[str]
    second: re.Pattern[str]
    please: re.Pattern[str]
    addressee: re.Pattern[str]
    readers: re.Pattern[str]
    modal: re.Pattern[str]
    self_reference: re.Pattern[str]
    vocative: re.Pattern[str]
    addressee_told: re.Pattern[str]
    if_you_are: re.Pattern[str]


def _patterns(merged: bool) -> _Patterns:
    def w(*items: str) -> str:
        return _words(*items, merged=merged)

    literals = _ROLE_LITERALS.replace("l", "i") if merged else _ROLE_LITERALS
    return _Patterns(
        role=re.compile(rf"^[\W_]*{w(_ROLES)}\s*:|[\[<{{]\s*/?\s*{w(_ROLES)}\s*[\]>}}]|{literals}"),
        drop=re.compile(
            rf"{w(_DROP_VERBS)}(?:\s+\S+){{0,4}}?\s*{w(_DROP_OBJECTS)}"
            rf"|{w(_DROP_OBJECTS)}(?:\s+\S+){{0,3}}?\s+{w(_DROP_VERBS)}"
        ),
        credentials=re.compile(w(_CREDENTIALS)),
        request=re.compile(w(_REQUEST_VERBS)),
        opening_order=re.compile(
            rf"^(?:[\w-]+(?:\s+[\w-]+)?\s*,\s*|{w(_LEAD_IN)}\s+)?(?:{w(_PLEASE)}[\s,]+)?"
            rf"(?:{w(_ORDER_VERBS)}(?:\s+{w(_ORDER_OBJECTS)}|\s*[.!]?$)|{w(_ORDER_PREFIXES)}|{w(_FOREIGN_ORDERS)})"
        ),
        foreign_order=re.compile(rf"[,;:\u2014-]\s*(?:{w(_PLEASE)}[\s,]+)?{w(_FOREIGN_ORDERS_LONG)}"),
        second=re.compile(rf"(?<![\w-]){w(_SECOND_PERSON)}"),
        please=re.compile(w(_PLEASE)),
        addressee=re.compile(rf"(?<![\w-]){w(_ADDRESSEES)}|\bautomated\s+\w+"),
        readers=re.compile(rf"(?<![\w-]){w(_READERS)}"),
        modal=re.compile(rf"(?<![\w-]){w(_MODAL_ORDER)}|{_TOLD}"),
        self_reference=re.compile(w(_SELF_REFERENCE)),
        addressee_told=re.compile(
            rf"(?:(?<![\w-]){w(_ADDRESSEES)}|\bautomated\s+\w+)(?:\s+\S+){{0,4}}?\s+"
            rf"(?:(?<![\w-]){w(_MODAL_ORDER)}|{_TOLD})(?:\s+\S+){{0,2}}?\s+{w(_OUTPUT_VERBS)}"
        ),
        vocative=re.compile(
            rf"(?:^[\W_]*|{w(_NOTE_WORDS)}\s*)(?:{w(_FOR_WORDS)}\s+)(?:{w(_ANY_WORDS)}\s+)?"
            rf"(?:\w+\s+)?{w(_ADDRESSEES)}(?:\s+\S+){{0,5}}?\s*(?::|—|$)"
            rf"|(?:^[\W_]*|[,;]\s*){w(_NOTE_WORDS)}\s+(?:{w(_FOR_WORDS)}\s+)(?:{w(_ANY_WORDS)}\s+)?"
            rf"(?:\w+\s+)?{w(_ADDRESSEES)}"
        ),
        if_you_are=re.compile(
            rf"(?<![\w-]){w(_IF_WORDS)}\s+{w(_YOU_WORDS)}\s+{w(_ARE_WORDS)}\s+(?:{w(_ARTICLES)}\s+)?"
            rf"(?:\w+\s+)?{w(_ADDRESSEES)}"
            rf"|(?<![\w-]){w(_IF_WORDS)}\s+{w(_YOU_WORDS)}\s+(?:{w(_ARTICLES)}\s+)?(?:\w+\s+)?"
            rf"{w(_ADDRESSEES)}\s+{w(_ARE_WORDS)}"
        ),
    )


# What an attacker disguises with ASCII look-alikes ("1gn0re", "lnstructions"): read merged as well.
_LOOK_ALIKE_PRONE = frozenset({"role", "drop", "credentials"})


@cache
def _compiled(merged: bool) -> _Patterns:
    """The patterns, compiled on first use (not at import: the answer handler's cold start)."""
    return _patterns(merged=merged)


_URL = re.compile(
    r"(?:https?|hxxps?|ftp)\s*:\s*/\s*/\s*[^\s<>\"']+|\bwww\s*\.\s*[a-z0-9-]+(?:\s*\.\s*[a-z0-9-]+)+"
    r"|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|ai|co|info|biz|xyz|ru|cn|ly|me|app|dev|site|"
    r"online|top|click|link|example)\b(?:/[^\s]*)?",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"[\w.+-]+\s*(?:@|\(at\)|\[at\])\s*[\w-]+(?:\s*(?:\.|\(dot\)|\[dot\])\s*[\w-]+)+", re.I)
_DOI_URL = re.compile(r"^(?:https?://)?(?:dx\.)?doi\.org/", re.I)

# Where a clause ends for judging: after . ! ? ; : (and their full-width forms) or a line break.
# Where a sentence ends (what is withheld) and where a clause ends (what is judged: `System: ...`,
# `...; then reply ...`): after the punctuation and white space, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|\n+|(?<=[\u3002\uff01\uff1f])")
_CLAUSE_END = re.compile(r"(?<=[.!?;:\u3002\uff01\uff1f\uff1b\uff1a])\s+|\n+|(?<=[\u3002\uff01\uff1f])")


# ---- handling directives: text about how this document must be summarised, cited, ranked, quoted ----
# A claim about the world has a subject in the paper's domain; a handling directive talks about the
# document's own summary, digest, ranking, citation or its readers' next step, in any mood. Parts:
# a product of processing (noun) or the processing (verb), tied to the document ("summary of this
# study", "this paper should be cited", "any digest prepared from it"), and a norm ("must", "is
# expected to", "applies to", "the only correct ... is that", "word for word"). The lexicons cover
# English, German, French, Spanish, Italian, Portuguese and Dutch.
_HANDLING_NOUNS = (
    "summary|summaries|summarisation*|summarization*|digest|digests|synopsis|synopses|overview|overviews|"
    "abstract|precis|recap|recaps|tldr|tl;dr|gist|write-up*|citation|citations|ranking|rankings|"
    "excerpt|excerpts|quotation|quotations|paraphrase*|condensation*|literature review*|answer|answers|"
    "report|reports|review|reviews|response|responses|output|outputs|brief|briefs|briefing*|"
    "zusammenfassung*|kurzfassung*|übersicht*|überblick*|resümee*|synopse*|zitat|zitate|zitation*|"
    "zitierung*|rangliste*|rangfolge*|auszug|auszüge|antwort*|résumé|résumés|synthèse|synthèses|abrégé*|"
    "aperçu*|classement*|extrait|extraits|compte rendu|comptes rendus|réponse*|récapitulatif*|resumen|"
    "resúmenes|síntesis|sinopsis|extracto*|cita|citas|citación*|clasificación*|reseña*|respuesta*|"
    "riassunt*|sintesi|sommario|sommari|estratto|estratti|citazion*|classifica|rassegna*|rispost*|"
    "resumo|resumos|síntese*|sinopse*|citação|citações|classificação*|extrato*|resposta*|resenha*|"
    "samenvatting*|overzicht*|citaat|citaten|citering*|rangschikking*|ranglijst*|uittreksel*|antwoord*"
)
_HANDLING_VERBS = (
    "summarise*|summarize*|summarising|summarizing|condense*|condensing|cite|cited|citing|quote|quoted|"
    "quoting|rank|ranked|excerpted|paraphrase*|paraphrasing|processed|digested|abridge*|zusammengefasst|"
    "zusammenfassen|zusammenzufassen|zitiert*|zitieren|zu zitieren|gerankt|eingestuft|wiedergegeben|"
    "wiederzugeben|résumer|résumée|résumées|citer|cité|citée|citées|cités|classé|classée|classés|"
    "reprendre|resumir|resumido*|citar|citado*|clasificado*|riassumere|riassunto|riassunta|citare|citato|"
    "citata|citati|classificat*|riportare|riportato|resumido|resumida|citada|classificado*|samengevat|"
    "samenvatten|geciteerd|citeren|gerangschikt|verwerkt"
)
_DOC_DETERMINERS = (
    "this|the present|the current|the enclosed|diese|dieser|dieses|diesem|diesen|vorliegende*|ce|cet|"
    "cette|le présent|la présente|du présent|de la présente|este|esta|estos|el presente|la presente|"
    "del presente|questo|questa|quest'|quest\u2019|il presente|la presente|deste|desta|neste|nesta|o presente|"
    "a presente|dit|deze|het huidige|de huidige|het onderhavige"
)
_DOC_NOUNS = (
    "paper|study|work|article|document|manuscript|report|text|trial|review|analysis|investigation|chapter|"
    "section|source|preprint|submission|publication|contribution|survey|experiment|note|page|studie|"
    "arbeit|artikel*|dokument*|text*|bericht*|beitrag*|untersuchung|publikation|manuskript*|quelle|"
    "étude|travail|texte|rapport|papier|manuscrit|essai|estudio|artículo|documento|trabajo|texto|informe|"
    "manuscrito|ensayo|publicación|fuente|studio|articolo|lavoro|testo|rapporto|manoscritto|saggio|"
    "pubblicazione|fonte|estudo|artigo|trabalho|relatório|ensaio|publicação|werk|tekst|onderzoek|"
    "publicatie|bron|verslag"
)
# What refers back to the document or to an announced step: only with a handling word, or right after
# a sentence about the document's handling.
_OF_IT = "of it|from it|of them|thereof|herein|davon|daraus|de ello|dele|dela|deles|ervan|daarvan"
_PRONOUNS = (
    "it|its|they|them|their|this sentence|these words|this statement|the above|es|sie|darin|dabei|"
    "ils|elle|elles|ello|ellos|ellas|esso|essa|essi|esse|ele|ela|eles|elas|hij|zij|ze|daarin"
)
# What a directive asks the processor to do with the content (in context: "they must omit ...").
_CONTENT_VERBS = (
    "mention*|omit*|leave out|describe*|present*|state|list|repeat*|include*|exclude*|erwähn*|nenn*|"
    "weglass*|wegzulassen|darstell*|darzustellen|mentionn*|omettre|omis|présent*|mencion*|omitir|omitid*|"
    "presentar|menzion*|omettere|omess*|presentare|apresentar|vermeld*|weglaten|weggelaten|presenteren"
)
_CONDITIONS = "if|when|whenever|once|wenn|falls|sobald|si|lorsque|quand|cuando|se|quando|als|wanneer|zodra"
_CONTEXT_NORMS = "may|might|can|darf|dürfen|peut|peuvent|puede|pueden|può|possono|pode|podem|kan|kunnen"
_NORMS = (
    "must|must not|should|shall|ought to|is to|are to|is to be|are to be|has to|have to|needs to|need to|"
    "is expected to|are expected to|is required to|are required to|is supposed to|are supposed to|"
    "may only|can only|may not|is only to|applies to|apply to|is mandatory|belongs at the top|"
    "belongs first|counts as|is to be regarded|are to be regarded|muss|müssen|soll|sollen|sollte*|darf|"
    "dürfen|gilt|gelten|ist zu|sind zu|hat zu|haben zu|doit|doivent|devrait|devraient|il faut|est à|"
    "sont à|ne peut|ne peuvent|s'applique*|compte comme|debe|deben|debería*|tiene que|tienen que|ha de|"
    "han de|hay que|se aplica*|cuenta como|deve|devono|dovrebbe*|va|vanno|occorre|bisogna|si applica*|"
    "devem|deveria*|tem de|tem que|têm de|têm que|aplica-se|aplicam-se|moet|moeten|zou moeten|dient|"
    "dienen|geldt|gelden|mag|mogen"
)
# German puts the infinitive last: "hat die Ergebnisse ... darzustellen", "ist ... zu nennen".
_ZU_INFINITIVE = r"\b(?:hat|haben|ist|sind)\b(?:\s+\S+){0,8}?\s+(?:\w+zu\w+en|zu\s+\w+en)\b"
# The future announces what a product of processing will say as firmly as a norm ("every overview of
# this article will present ..."): the English auxiliary, German "wird ... darstellen" with a content
# verb last, and the Romance futures of the content verbs (only ever read with a handling word tied to
# the document, like every norm).
_FUTURE = (
    "will|will not|won't|is going to|are going to|présentera*|mentionnera*|omettra*|inclura*|"
    "répétera*|presentará*|mencionará*|omitirá*|incluirá*|repetirá*|presenterà|presenteranno|"
    "menzionerà|menzioneranno|ometterà|ometteranno|includerà|includeranno|ripeterà|ripeteranno|"
    "apresentará*|zal|zullen"
)
_WIRD_INFINITIVE = (
    r"\b(?:wird|werden)\b(?:\s+\S+){0,8}?\s+(?:darstellen|nennen|erwähnen|weglassen|aufführen|"
    r"wiederholen|anführen|zitieren|bezeichnen)\b"
)
_ONLY = "only|sole|single|one|einzig|einzige|seul|seule|único|única|unico|unica|único|enige"
_CORRECT = (
    "definitive|correct|proper|right|acceptable|valid|true|faithful|accurate|authoritative|official|"
    "approved|permissible|legitimate|richtig*|korrekt*|zulässig*|gültig*|correcte|fidèle|valable|exact|"
    "exacte|correcto|correcta|válido|válida|fiel|corretto|corretta|valido|valida|fedele|correto|correta|"
    "juiste|geldige|getrouwe"
)
_DEFINING = (
    "is that|are that|is:|reads|states that|says that|is as follows|lautet|ist, dass|ist dass|est que|"
    "sont que|es que|son que|è che|sono che|é que|são que|is dat|zijn dat|luidt"
)
_VERBATIM = (
    "word for word|verbatim|in exactly these words|in these exact words|exactly as written|"
    "without alteration|without modification|wortwörtlich|wörtlich|mot pour mot|mot à mot|textuellement|"
    "palabra por palabra|textualmente|literalmente|parola per parola|testualmente|letteralmente|"
    "palavra por palavra|woord voor woord|letterlijk"
)
_AUTHORITY = (
    "definitive|authoritative|decisive|landmark|primary reference|primary source|only reliable|"
    "most reliable|gold standard|at the top|first in every|first in any|referencia|référence absolue|"
    "la référence|maßgeblich*|massgeblich*|verlässlichste"
)
# Sentences that announce what follows: caught with the directive they announce.
_ANNOUNCING = (
    "the following|as follows|below|hereafter|one last|one final|one more|one further|a final|a last|"
    "a further|an additional|the remaining details|folgende*|nachstehend*|eine letzte|eine weitere|"
    "eine zusätzliche|ce qui suit|ci-dessous|suivant*|une dernière|une autre|une précision|lo siguiente|"
    "a continuación|una última|otra|una indicación|quanto segue|di seguito|seguent*|un'ultima|o seguinte|"
    "a seguir|uma última|het volgende|hieronder|volgend*|een laatste|nog een|a note|a remark|a word on|"
    "how this|wie diese*|comment ce*|cómo este*|come questo*|como este*|hoe dit"
)
# The formulas that close an instruction block: withheld right after one.
_CLOSERS = (
    "that is all|nothing else|no other change*|end of note|end of instructions|this concludes|"
    "das ist alles|sonst nichts|nichts weiter|c'est tout|rien d'autre|rien de plus|eso es todo|nada más|"
    "è tutto|nient'altro|é tudo|nada mais|dat is alles|verder niets|niets anders"
)
_PRO_DROP_NORM = (
    "debe|deben|debería*|tiene que|tienen que|hay que|deve|devono|dovrebbe*|devem|deveria*|tem de|"
    "tem que|têm de|têm que|doit|doivent|muss|müssen|moet|moeten|must|should|has to|have to"
)


_PUNCT = r"[^\w\s]*"  # "In any digest, this paper ..."


@dataclass(frozen=True)
class _HandlingPatterns:
    word: re.Pattern[str]
    tie: re.Pattern[str]
    norm: re.Pattern[str]
    correct: re.Pattern[str]
    defining: re.Pattern[str]
    verbatim: re.Pattern[str]
    authority: re.Pattern[str]
    announcing: re.Pattern[str]
    document: re.Pattern[str]
    closer: re.Pattern[str]
    continuing: re.Pattern[str]
    content: re.Pattern[str]
    context_norm: re.Pattern[str]


@cache
def _handling_patterns() -> _HandlingPatterns:
    def w(*items: str) -> str:
        return _words(*items, merged=False)

    noun, verb = w(_HANDLING_NOUNS), w(_HANDLING_VERBS)
    doc = rf"{w(_DOC_DETERMINERS)}\s*(?:[\w-]+\s+)?{w(_DOC_NOUNS)}"
    norm = rf"(?<![\w-]){w(_NORMS, _FUTURE)}|{_ZU_INFINITIVE}|{_WIRD_INFINITIVE}|{_TOLD}"
    return _HandlingPatterns(
        word=re.compile(rf"{noun}|{verb}"),
        tie=re.compile(
            rf"{noun}{_PUNCT}(?:\s+\S+){{0,4}}?\s+{doc}|{doc}\s*['\u2019]s\s+(?:\w+\s+)?{noun}"
            rf"|{doc}{_PUNCT}(?:\s+\S+){{0,6}}?\s+{verb}|{verb}{_PUNCT}(?:\s+\S+){{0,2}}?\s+{doc}"
            rf"|{noun}(?:\s+\S+){{0,3}}?\s+{w(_OF_IT)}"
            rf"|(?<![\w-]){w(_CONDITIONS)}\s+(?:{w(_PRONOUNS)}|{doc})(?:\s+\S+){{0,2}}?\s+{verb}"
        ),
        norm=re.compile(norm),
        correct=re.compile(rf"(?<![\w-])(?:{w(_ONLY)}\s+)?{w(_CORRECT)}\s+(?:\S+\s+)?{noun}"),
        defining=re.compile(rf"{w(_DEFINING)}|\b(?:is|ist|est|es|è|é)\s*:"),
        verbatim=re.compile(w(_VERBATIM)),
        authority=re.compile(w(_AUTHORITY)),
        announcing=re.compile(rf"{w(_ANNOUNCING)}|:$"),
        document=re.compile(rf"{doc}|(?<![\w-]){w(_OF_IT)}"),
        closer=re.compile(rf"^{w(_CLOSERS)}"),
        continuing=re.compile(
            rf"^(?:only\s+|nur\s+|seul\w*\s+|solo\s+|sólo\s+|alleen\s+)?(?:{w(_PRONOUNS)}|{w(_PRO_DROP_NORM)})\b"
        ),
        content=re.compile(rf"(?<![\w-])(?:{w(_PRONOUNS)}|{w(_CONTENT_VERBS)})"),
        context_norm=re.compile(rf"{norm}|(?<![\w-]){w(_CONTEXT_NORMS)}"),
    )


class Handling:
    """What a sentence says about its own document's handling (see the section's comment). Each part
    is read when first asked: most sentences name no product of processing, and the parts that matter
    only next to a caught sentence (announcer, closer, in context) are rarely asked."""

    def __init__(self, text: str) -> None:
        plain = fold(text)
        joined = _joined(plain)
        self._readings = (plain,) if joined == plain else (plain, joined)
        self._opening = re.sub(r"^[^\w]+", "", plain)
        self._patterns = _handling_patterns()

    def _found(self, name: str) -> bool:
        pattern: re.Pattern[str] = getattr(self._patterns, name)
        return any(pattern.search(reading) for reading in self._readings)

    @cached_property
    def _word(self) -> bool:
        return self._found("word")

    @cached_property
    def _tie(self) -> bool:
        return self._word and self._found("tie")

    @cached_property
    def _norm(self) -> bool:
        return self._word and self._found("norm")

    @cached_property
    def _correct(self) -> bool:
        return self._word and self._found("correct")

    @cached_property
    def directive(self) -> bool:
        """A handling directive on its own."""
        found = self._found
        return self._word and (
            (self._tie and (self._norm or found("authority") or found("verbatim") or found("defining")))
            or (self._correct and (self._tie or found("defining")))
            or (self._norm and found("verbatim"))
        )

    @cached_property
    def in_context(self) -> bool:
        """A directive when it follows a sentence about the document's handling."""
        return self.directive or (
            (self._word or bool(self._patterns.continuing.search(self._opening)) or self._found("content"))
            and self._found("context_norm")
        )

    @property
    def candidate(self) -> bool:
        """The rules see its parts but cannot decide: the embedder judges it."""
        return self._word and not self.directive and (self._tie or self._norm or self._correct)

    @property
    def context(self) -> bool:
        """It is about the document's handling: the next sentence is judged in its context."""
        return self._tie

    @cached_property
    def announcer(self) -> bool:
        """It announces what follows: withheld with the directive it announces. An announcement of the
        paper's own structure ("The following section describes the setup.") announces nothing about
        the document's handling: only one that names the document or its handling, or one too short to
        say anything else, goes with the directive after it."""
        return self._tie or (
            self._found("announcing")
            and (self._word or self._found("document") or len(self._opening.split()) <= 6)
        )

    @cached_property
    def closer(self) -> bool:
        """A formula that closes an instruction block."""
        return bool(self._patterns.closer.search(self._opening)) and len(self._opening.split()) <= 8


@lru_cache(maxsize=8192)
def handling(text: str) -> Handling:
    """The handling-directive reading of one sentence (cached: a text is screened more than once)."""
    return Handling(text)


@dataclass(frozen=True)
class Verdict:
    hostile: bool
    signals: tuple[str, ...] = ()  # the classes found (strong and weak), never the text

    @property
    def only_links(self) -> bool:
        return self.hostile and set(self.signals) & STRONG == {LINK}


@dataclass(frozen=True)
class Clause:
    start: int
    end: int
    verdict: Verdict


@dataclass(frozen=True)
class Screened:
    """A text's clauses, judged; `clean_runs` are the verbatim spans made of consecutive clean clauses."""

    text: str
    clauses: list[Clause]
    clean_runs: list[tuple[int, int]] = field(default_factory=list)
    # how the text ends: on a hostile sentence, on one about the document's handling (the context of
    # the text that follows it)
    ends_hostile: bool = False
    ends_in_context: bool = False

    @property
    def hostile(self) -> list[Clause]:
        return [clause for clause in self.clauses if clause.verdict.hostile]

    @property
    def hostile_count(self) -> int:
        """Hostile clauses that do more than carry a foreign link; a handling directive spread over
        consecutive sentences (announced, continued, closed) counts once."""
        count, in_directive = 0, False
        for clause in self.clauses:
            strong = set(clause.verdict.signals) & STRONG if clause.verdict.hostile else set()
            handling_only = bool(strong) and strong <= _HANDLING_SIGNALS
            if strong and strong != {LINK} and not (handling_only and in_directive):
                count += 1 if HANDLING in strong or not handling_only else 0
            in_directive = handling_only and (in_directive or HANDLING in strong)
        return count


def _host(value: str) -> str:
    value = value.strip().lower()
    if "://" not in value:
        value = "//" + value
    try:
        host = urlsplit(value).hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def own_links(*values: str | None) -> frozenset[str]:
    """What a source's own metadata lets its text mention: its URL's host, its DOI, its e-mail domains."""
    allowed: set[str] = set()
    for value in values:
        if not value:
            continue
        value = value.strip().lower()
        if value.startswith("10.") or _DOI_URL.match(value):
            allowed.add(_DOI_URL.sub("", value))
            continue
        if "@" in value and "://" not in value:
            allowed.add(value.rsplit("@", 1)[1])
            continue
        host = _host(value)
        if host:
            allowed.add(host)
    return frozenset(allowed)


def _link_is_own(link: str, allowed: frozenset[str]) -> bool:
    compact = re.sub(r"\s+", "", link).lower()
    if _DOI_URL.match(compact):
        return _DOI_URL.sub("", compact).rstrip(".,;)") in allowed
    host = compact.rsplit("@", 1)[1] if "@" in compact and "://" not in compact else _host(compact)
    host = host.rstrip(".,;)")
    return bool(host) and any(host == item or host.endswith("." + item) for item in allowed)


def judge(text: str, allowed_links: frozenset[str] = frozenset(), *, after_hostile: bool = False) -> Verdict:
    """Whether one sentence (or clause) speaks to the reader or to an assistant."""
    raw = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    plain = fold(text)
    merged = fold(text, merged=True)
    plain_patterns, merged_patterns = _compiled(False), _compiled(True)
    readings = (
        (plain_patterns, plain),
        (plain_patterns, _joined(plain)),
        (merged_patterns, merged),
        (merged_patterns, _joined(merged)),
    )
    signals: list[str] = []

    def found(name: str) -> bool:
        chosen = readings if name in _LOOK_ALIKE_PRONE else readings[:2]
        return any(getattr(patterns, name).search(reading) for patterns, reading in chosen)

    def opening(name: str) -> bool:
        return any(getattr(p, name).search(re.sub(r"^[^\w]+", "", r)) for p, r in readings[:2])

    links = [m.group(0) for m in _URL.finditer(raw)] + [m.group(0) for m in _EMAIL.finditer(raw)]
    if any(not _link_is_own(link, allowed_links) for link in links):
        signals.append(LINK)
    if found("role"):
        signals.append(ROLE_MARKER)
    if found("drop"):
        signals.append(OVERRIDE)
    formal = bool(_FORMAL_IMPERATIVE.search(re.sub(r"^[^\w]+", "", plain)))
    ordered = opening("opening_order") or found("foreign_order") or formal
    second = found("second") or formal
    modal = found("modal")
    addressee = found("addressee")
    readers = found("readers")
    please = found("please")
    if found("credentials") and (
        second or readers or please or ordered or (LINK in signals and found("request"))
    ):
        signals.append(CREDENTIALS)
    if (
        found("vocative")
        or found("if_you_are")
        or found("addressee_told")
        or (addressee and (second or ordered or please))
        or (addressee and modal and found("self_reference"))
    ):
        signals.append(ASSISTANT)
    if ordered or (second and modal) or (readers and modal and found("self_reference")):
        signals.append(READER_ORDER)
    weak = [
        name
        for name, present in ((SECOND_PERSON, second), (PLEASE, please), (ADDRESSEE, addressee))
        if present
    ]
    strong = [name for name in signals if name in STRONG]
    hostile = bool(strong) or len(weak) >= 2 or (after_hostile and bool(weak))
    return Verdict(hostile, tuple(dict.fromkeys([*signals, *weak])))


def _spans(text: str, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for match in boundary.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    trimmed = []
    for begin, end in spans:
        while begin < end and text[begin].isspace():
            begin += 1
        while end > begin and text[end - 1].isspace():
            end -= 1
        if end > begin:
            trimmed.append((begin, end))
    return trimmed


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, ends trimmed of white space."""
    return _spans(text, _SENTENCE_END)


def clause_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each clause of `text` (sentences cut at `;` and `:` too)."""
    return _spans(text, _CLAUSE_END)


def judge_sentence(
    text: str, allowed_links: frozenset[str] = frozenset(), *, after_hostile: bool = False
) -> Verdict:
    """A sentence is hostile when it is as a whole, or when one of its clauses is (the clause after a
    hostile one needing only a weak signal)."""
    verdicts = [judge(text, allowed_links, after_hostile=after_hostile)]
    clauses = clause_spans(text)
    if len(clauses) > 1:
        previous = after_hostile
        for start, end in clauses:
            verdict = judge(text[start:end], allowed_links, after_hostile=previous)
            verdicts.append(verdict)
            previous = verdict.hostile and not verdict.only_links
    signals = tuple(dict.fromkeys(signal for verdict in verdicts for signal in verdict.signals))
    return Verdict(any(verdict.hostile for verdict in verdicts), signals)


def _with_handling(verdict: Verdict, signal: str) -> Verdict:
    return Verdict(True, tuple(dict.fromkeys([*verdict.signals, signal])))


def _judged(
    sentence: str,
    allowed_links: frozenset[str],
    *,
    after_hostile: bool,
    in_context: bool,
    semantic: dict[str, float],
) -> Verdict:
    """One sentence's verdict: the rules, then its handling of its own document (in the context of the
    sentence before it), then the embedder's opinion on what the rules left undecided."""
    verdict = judge_sentence(sentence, allowed_links, after_hostile=after_hostile)
    if verdict.hostile:
        return verdict
    reading = handling(sentence)
    if (
        reading.directive
        or (in_context and reading.in_context)
        or (reading.candidate and semantic.get(sentence, 0.0) >= directive_intents.THRESHOLD)
    ):
        return _with_handling(verdict, HANDLING)
    if after_hostile and reading.closer:
        return _with_handling(verdict, CLOSING)
    return verdict


def prime(texts: Iterable[str]) -> None:
    """Embeds, in one batch, the sentences of `texts` that the embedder will be asked about (the hot
    path screens texts one by one; a batch costs far less per sentence than single calls)."""
    candidates = [
        text[start:end]
        for text in texts
        for start, end in sentence_spans(text)
        if handling(text[start:end]).candidate
    ]
    if candidates and directive_intents.available():
        directive_intents.scores(candidates)


def screen(
    text: str, allowed_links: frozenset[str] = frozenset(), *, after: Screened | None = None
) -> Screened:
    """Every sentence of `text` judged; one right after a hostile sentence needs only a weak signal, and
    one after a sentence about the document's handling is judged in that context (`after`: the text
    that directly precedes this one, whose last sentence is the context of the first). A sentence that
    announces what a caught one carries out ("one last step applies to...") is withheld with it.
    The clean runs are what may be used: whole sentences, never the rest of a hostile one."""
    spans = sentence_spans(text)
    undecided = [text[a:b] for a, b in spans if handling(text[a:b]).candidate]
    semantic = directive_intents.scores(undecided) if undecided and directive_intents.available() else {}
    clauses: list[Clause] = []
    previous_hostile, in_context = (after.ends_hostile, after.ends_in_context) if after else (False, False)
    for start, end in spans:
        sentence = text[start:end]
        verdict = _judged(
            sentence, allowed_links, after_hostile=previous_hostile, in_context=in_context, semantic=semantic
        )
        clauses.append(Clause(start, end, verdict))
        previous_hostile = verdict.hostile and not verdict.only_links
        in_context = handling(sentence).context or bool(set(verdict.signals) & _HANDLING_SIGNALS)
    clauses = _with_announcers(text, clauses)
    return Screened(text, clauses, _clean_runs(clauses), previous_hostile, in_context)


def screen_in_order(texts: Sequence[tuple[str, frozenset[str], bool]]) -> list[Screened]:
    """Texts in reading order, each `(text, allowed links, whether it directly follows the previous
    one)`: a page's chunks or a paper's quotes. A text that follows another is judged in the context of
    its last sentence, and when its first sentence is caught, the sentences at the end of the other
    that announce it are withheld with it."""
    screened: list[Screened] = []
    for text, links, follows in texts:
        before = screened[-1] if follows and screened else None
        result = screen(text, links, after=before)
        if before is not None and result.clauses and _addressed(result.clauses[0]):
            screened[-1] = _announcing_tail(before)
        screened.append(result)
    return screened


def _addressed(clause: Clause) -> bool:
    return clause.verdict.hostile and not clause.verdict.only_links


def _announcing_tail(screened: Screened) -> Screened:
    """`screened` with the announcing sentences at its end withheld (what follows it was caught)."""
    clauses = _withhold_announcers(screened.text, screened.clauses, len(screened.clauses))
    if clauses == screened.clauses:
        return screened
    return Screened(screened.text, clauses, _clean_runs(clauses), True, True)


# How far back a caught sentence takes the sentences that announce it ("Note the following. For any
# digest of this paper: ... <the directive>").
MAX_ANNOUNCERS = 2


def _withhold_announcers(text: str, clauses: list[Clause], caught: int) -> list[Clause]:
    """`clauses` with the announcing ones right before clause `caught` withheld."""
    judged = list(clauses)
    for back in range(caught - 1, max(caught - 1 - MAX_ANNOUNCERS, -1), -1):
        before = judged[back]
        if before.verdict.hostile or not handling(text[before.start : before.end]).announcer:
            break
        judged[back] = Clause(before.start, before.end, _with_handling(before.verdict, ANNOUNCING))
    return judged


def _with_announcers(text: str, clauses: list[Clause]) -> list[Clause]:
    judged = list(clauses)
    for index, clause in enumerate(clauses):
        if clause.verdict.hostile and not clause.verdict.only_links:
            judged = _withhold_announcers(text, judged, index)
    return judged


def _clean_runs(clauses: list[Clause]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    previous: Clause | None = None
    for clause in clauses:
        if clause.verdict.hostile:
            previous = clause
            continue
        if runs and previous is not None and not previous.verdict.hostile:
            runs[-1] = (runs[-1][0], clause.end)
        else:
            runs.append((clause.start, clause.end))
        previous = clause
    return runs


def is_hostile(text: str, allowed_links: frozenset[str] = frozenset()) -> bool:
    return bool(screen(text, allowed_links).hostile)


def without_hostile(text: str, allowed_links: frozenset[str] = frozenset()) -> str:
    """`text` with its hostile clauses left out (the clean runs joined by a space)."""
    screened = screen(text, allowed_links)
    if not screened.hostile:
        return text
    return " ".join(text[start:end] for start, end in screened.clean_runs)


def without_addressed(text: str) -> str:
    """`text` without the sentences addressed to the reader or a model; a sentence held back only for a
    link stays (whose link it is, the caller cannot tell here)."""
    screened = screen(text)
    kept = [c for c in screened.clauses if not c.verdict.hostile or c.verdict.only_links]
    if len(kept) == len(screened.clauses):
        return text
    return " ".join(text[clause.start : clause.end] for clause in kept)


def hostile_source(screenings: Iterable[Screened]) -> bool:
    """Whether a source is full of text addressed to the reader or a model (see the thresholds)."""
    total = hostile = 0
    for screened in screenings:
        total += len(screened.clauses)
        hostile += screened.hostile_count
    return hostile >= HOSTILE_SOURCE_MIN_SENTENCES or (
        hostile >= 2 and total > 0 and hostile / total >= HOSTILE_SOURCE_MIN_SHARE
    )


def tainted_sources(withheld: Iterable[tuple[str, str]]) -> set[str]:
    """The sources (of `(source id, signals)` per withheld sentence) that carry a sentence addressed to
    the reader or a model, not only a foreign link: their other sentences stay evidence, but they lose
    their authority (never the direct answer, a heading or a theme)."""
    return {source_id for source_id, signals in withheld if set(signals.split(", ")) & ADDRESSED}


def signal_summary(verdicts: Sequence[Verdict]) -> str:
    """The classes found, counted (what a red-team flag says instead of quoting the text)."""
    counts: dict[str, int] = {}
    for verdict in verdicts:
        for signal in verdict.signals:
            if signal in STRONG:
                counts[signal] = counts.get(signal, 0) + 1
    return ", ".join(f"{name} x{count}" for name, count in sorted(counts.items())) or "weak signals"
