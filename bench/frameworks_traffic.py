"""Traffic of the frameworks benchmark: a bilingual bike-share assistant's knowledge and chats.

Sixteen chunks (eight English, eight Spanish) and eight scripted three-turn conversations, four
per language. Each turn has the question as typed, the standalone rewrite a condense step makes
of a follow-up, the chunk that answers it and the grounded answer. Four turns per pipeline are
planted failures (the same four in every pipeline):

- ``wrong_chunk``: the answer is taken from another retrieved chunk (it does not answer);
- ``changed_number``: the right chunk, a number in the answer changed;
- ``miss_answered``: the answering chunk is not retrieved; the model answers anyway;
- ``miss_abstains``: the answering chunk is not retrieved; the model says it cannot tell.

Text written for this benchmark; nothing here is fitted to it.
"""

from __future__ import annotations

from dataclasses import dataclass

CHUNKS = {
    "en-rent": "A Bicivia bike can be rented for up to 45 minutes per ride on the basic pass;"
    " every extra 30 minutes costs 1.50 euros.",
    "en-pass": "The annual Bicivia pass costs 60 euros and includes unlimited 45-minute rides.",
    "en-ebike": "Electric bikes have a range of about 50 kilometres on a full battery and cost"
    " 0.20 euros extra per minute.",
    "en-lost": "A lost or stolen bike must be reported within 24 hours; otherwise the rider is"
    " charged 450 euros.",
    "en-dock": "Bikes are returned at any Bicivia station; the app shows free docks in real time.",
    "en-child": "Riders must be at least 16 years old; child seats are not allowed on the bikes.",
    "en-damage": "Damage to a bike is reported with the red button on the dock before the ride.",
    "en-night": "The service runs from 6 am to midnight; between midnight and 6 am no bike can be"
    " unlocked.",
    "es-alquiler": "Una bici de Bicivia se alquila hasta 45 minutos por viaje con el abono"
    " básico; cada 30 minutos extra cuestan 1,50 euros.",
    "es-abono": "El abono anual de Bicivia cuesta 60 euros e incluye viajes ilimitados de 45"
    " minutos.",
    "es-electrica": "Las bicis eléctricas tienen una autonomía de unos 50 kilómetros con la"
    " batería llena y cuestan 0,20 euros más por minuto.",
    "es-robo": "La pérdida o el robo de una bici se comunica en 24 horas; si no, se cobran 450"
    " euros.",
    "es-estacion": "Las bicis se devuelven en cualquier estación de Bicivia; la app muestra los"
    " anclajes libres.",
    "es-edad": "Para usar el servicio hay que tener al menos 16 años; no se permiten sillas"
    " infantiles.",
    "es-averia": "Una avería se comunica con el botón rojo del anclaje antes de salir.",
    "es-horario": "El servicio funciona de 6 de la mañana a medianoche; de medianoche a 6 no se"
    " puede desbloquear ninguna bici.",
}


@dataclass(frozen=True)
class Turn:
    conversation: str
    index: int  # 1, 2, 3
    typed: str
    rewrite: str | None  # the standalone question a condense step makes of a follow-up
    chunk: str  # the chunk that answers it
    answer: str  # what a grounded assistant says
    planted: str | None = None  # a planted failure kind, or None for a clean turn


_CONVERSATIONS: list[list[tuple[str, str | None, str, str]]] = [
    [
        ("How long can I ride a Bicivia bike?", None, "en-rent", "Up to 45 minutes per ride."),
        (
            "And what if I go over?",
            "What does it cost to ride a Bicivia bike over 45 minutes?",
            "en-rent",
            "Every extra 30 minutes costs 1.50 euros.",
        ),
        (
            "Is there a yearly option?",
            "Is there an annual Bicivia pass and what does it cost?",
            "en-pass",
            "Yes, the annual pass costs 60 euros.",
        ),
    ],
    [
        ("How far can an electric bike go?", None, "en-ebike", "About 50 kilometres."),
        (
            "Do they cost more?",
            "Do electric Bicivia bikes cost more than regular ones?",
            "en-ebike",
            "Yes, 0.20 euros extra per minute.",
        ),
        (
            "Where do I leave it afterwards?",
            "Where do I return a Bicivia bike?",
            "en-dock",
            "At any Bicivia station.",
        ),
    ],
    [
        ("Someone stole my bike, what now?", None, "en-lost", "Report it within 24 hours."),
        (
            "And if I report it late?",
            "What happens if a stolen Bicivia bike is reported late?",
            "en-lost",
            "You are charged 450 euros.",
        ),
        (
            "The bike I took is broken, how do I tell you?",
            "How do I report a damaged Bicivia bike?",
            "en-damage",
            "Press the red button on the dock before the ride.",
        ),
    ],
    [
        ("Can my 14-year-old ride?", None, "en-child", "No, riders must be at least 16."),
        (
            "Could I carry her in a child seat?",
            "Are child seats allowed on Bicivia bikes?",
            "en-child",
            "No, child seats are not allowed.",
        ),
        (
            "Can we ride at 1 am?",
            "Can a Bicivia bike be unlocked at 1 am?",
            "en-night",
            "No, no bike can be unlocked between midnight and 6 am.",
        ),
    ],
    [
        ("¿Cuánto tiempo puedo usar una bici?", None, "es-alquiler", "Hasta 45 minutos por viaje."),
        (
            "¿Y si me paso?",
            "¿Cuánto cuesta pasarse de los 45 minutos con una bici de Bicivia?",
            "es-alquiler",
            "Cada 30 minutos extra cuestan 1,50 euros.",
        ),
        (
            "¿Hay algo para todo el año?",
            "¿Cuánto cuesta el abono anual de Bicivia?",
            "es-abono",
            "El abono anual cuesta 60 euros.",
        ),
    ],
    [
        ("¿Cuántos kilómetros hace una eléctrica?", None, "es-electrica", "Unos 50 kilómetros."),
        (
            "¿Son más caras?",
            "¿Cuestan más las bicis eléctricas de Bicivia?",
            "es-electrica",
            "Sí, 0,20 euros más por minuto.",
        ),
        (
            "¿Dónde la dejo luego?",
            "¿Dónde se devuelve una bici de Bicivia?",
            "es-estacion",
            "En cualquier estación de Bicivia.",
        ),
    ],
    [
        ("Me han robado la bici, ¿qué hago?", None, "es-robo", "Comunícalo en 24 horas."),
        (
            "¿Y si aviso tarde?",
            "¿Qué pasa si se comunica tarde el robo de una bici de Bicivia?",
            "es-robo",
            "Se cobran 450 euros.",
        ),
        (
            "La bici que cogí está rota, ¿cómo aviso?",
            "¿Cómo se comunica una avería de una bici de Bicivia?",
            "es-averia",
            "Con el botón rojo del anclaje antes de salir.",
        ),
    ],
    [
        ("¿Puede usarla mi hija de 14 años?", None, "es-edad", "No, hay que tener 16 años."),
        (
            "¿Y llevarla en una sillita?",
            "¿Se permiten sillas infantiles en las bicis de Bicivia?",
            "es-edad",
            "No, no se permiten sillas infantiles.",
        ),
        (
            "¿Podemos salir a la una de la madrugada?",
            "¿Se puede desbloquear una bici de Bicivia a la una de la madrugada?",
            "es-horario",
            "No, de medianoche a 6 no se puede desbloquear ninguna bici.",
        ),
    ],
]

# (conversation, turn) -> (kind, the answer said instead of the grounded one)
PLANTED: dict[tuple[int, int], tuple[str, str | None]] = {
    (0, 3): ("wrong_chunk", "Electric bikes cost 0.20 euros extra per minute."),
    (2, 2): ("changed_number", "You are charged 150 euros."),
    (5, 2): ("miss_answered", None),
    (7, 3): ("miss_abstains", "Lo siento, no tengo esa información."),
}


def conversations() -> list[list[Turn]]:
    """The eight conversations, planted failures in place."""
    out = []
    for c, turns in enumerate(_CONVERSATIONS):
        conv = []
        for i, (typed, rewrite, chunk, answer) in enumerate(turns, start=1):
            kind, said = PLANTED.get((c, i), (None, None))
            conv.append(Turn(f"bike-{c}", i, typed, rewrite, chunk, said or answer, kind))
        out.append(conv)
    return out


def retrieved(turn: Turn) -> list[str]:
    """The chunk keys the scripted retriever returns for a turn: its chunk and two others of
    its language, or three others for a planted retrieval miss."""
    lang = turn.chunk.split("-")[0]
    others = [k for k in CHUNKS if k.startswith(lang) and k != turn.chunk]
    start = sum(map(ord, turn.typed)) % len(others)
    picked = [others[(start + j) % len(others)] for j in range(3)]
    if turn.planted == "wrong_chunk" and "en-ebike" not in picked[:2]:
        picked[0] = "en-ebike"
    if turn.planted in ("miss_answered", "miss_abstains"):
        return picked
    return [turn.chunk, *picked[:2]]
