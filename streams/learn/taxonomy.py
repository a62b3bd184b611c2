"""The memory taxonomy: types, TTL policy and default scope (docs/architecture.md §4B).

New types need no migration: ``allowed_types(extra)`` widens the set by
configuration, and an unknown type gets the conservative defaults
(global scope, 365 days, reduce weight).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterable, Literal

Scope = Literal["global", "unit"]
TtlAction = Literal["reduce_weight", "delete"]

PREFERENCIA = "preferencia"
DATA_COMEMORATIVA = "data_comemorativa"
VINCULO_SOCIAL = "vinculo_social"
PADRAO_COMPORTAMENTAL = "padrao_comportamental"
RECLAMACAO = "reclamacao"
FEEDBACK_POSITIVO = "feedback_positivo"
RESTRICAO = "restricao"
VINCULO_COMERCIAL = "vinculo_comercial"
CONTEXTO_PESSOAL = "contexto_pessoal"

MEMORY_TYPES: tuple[str, ...] = (
    PREFERENCIA,
    DATA_COMEMORATIVA,
    VINCULO_SOCIAL,
    PADRAO_COMPORTAMENTAL,
    RECLAMACAO,
    FEEDBACK_POSITIVO,
    RESTRICAO,
    VINCULO_COMERCIAL,
    CONTEXTO_PESSOAL,
)

#: Weight multiplier applied when a "reduce_weight" TTL elapses.
REDUCED_WEIGHT_FACTOR = 0.7


@dataclass(frozen=True)
class TtlPolicy:
    days: int | None          # None: never expires
    action: TtlAction | None  # what aging does once ``days`` have passed


TTL: dict[str, TtlPolicy] = {
    PREFERENCIA: TtlPolicy(365, "reduce_weight"),
    DATA_COMEMORATIVA: TtlPolicy(None, None),
    VINCULO_SOCIAL: TtlPolicy(730, "delete"),
    PADRAO_COMPORTAMENTAL: TtlPolicy(365, "reduce_weight"),
    RECLAMACAO: TtlPolicy(180, "delete"),
    FEEDBACK_POSITIVO: TtlPolicy(365, "delete"),
    RESTRICAO: TtlPolicy(None, None),
    VINCULO_COMERCIAL: TtlPolicy(365, "reduce_weight"),
    CONTEXTO_PESSOAL: TtlPolicy(365, "reduce_weight"),
}
DEFAULT_TTL = TtlPolicy(365, "reduce_weight")

UNIT_SCOPED: frozenset[str] = frozenset({RECLAMACAO, FEEDBACK_POSITIVO, PADRAO_COMPORTAMENTAL})

#: One-line descriptions, used in the LLM prompt.
DESCRIPTIONS: dict[str, str] = {
    PREFERENCIA: "preferência durável (suíte/quarto, bebida, canal de contato, andar, unidade)",
    DATA_COMEMORATIVA: "data comemorativa (aniversário do cliente ou de alguém próximo, casamento, namoro)",
    VINCULO_SOCIAL: "pessoa próxima do cliente (cônjuge, namorado(a), filhos, pais) e com quem viaja",
    PADRAO_COMPORTAMENTAL: "hábito recorrente (horário habitual de chegada, frequência e dias das visitas)",
    RECLAMACAO: "reclamação concreta sobre a estadia ou o serviço",
    FEEDBACK_POSITIVO: "elogio concreto a um funcionário, item ou serviço",
    RESTRICAO: "restrição de saúde, alimentar ou de acessibilidade (alergias, intolerâncias, não bebe)",
    VINCULO_COMERCIAL: "empresa, agência ou convênio a que o cliente está ligado",
    CONTEXTO_PESSOAL: "contexto pessoal durável (profissão, cidade onde mora, animal de estimação)",
}


def normalise_type(memory_type: str) -> str:
    return memory_type.strip().lower()


def allowed_types(extra: Iterable[str] = ()) -> frozenset[str]:
    """The built-in taxonomy plus the configured extra types."""
    return frozenset(MEMORY_TYPES) | {normalise_type(t) for t in extra if t.strip()}


def is_known_type(memory_type: str, extra: Iterable[str] = ()) -> bool:
    return normalise_type(memory_type) in allowed_types(extra)


def ttl_policy(memory_type: str) -> TtlPolicy:
    return TTL.get(normalise_type(memory_type), DEFAULT_TTL)


def expires_at(memory_type: str, created_at: datetime) -> datetime | None:
    """When the TTL of a fact created at ``created_at`` elapses (None: never)."""
    policy = ttl_policy(memory_type)
    return None if policy.days is None else created_at + timedelta(days=policy.days)


def default_scope(memory_type: str) -> Scope:
    return "unit" if normalise_type(memory_type) in UNIT_SCOPED else "global"
