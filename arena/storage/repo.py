"""Repository functions over a Session: the only queries the rest of the arena needs.

Functions that write commit before they return (or roll back and raise), so each is one
transaction; functions that only read leave the session as it was. Import from here;
the modules behind it are split by noun.
"""

from __future__ import annotations

from arena.storage.bots import (
    active_versions,
    add_bot_version,
    disable_bot,
    find_bot,
    get_bot,
    get_version,
    list_bots,
    resolve_version_id,
    set_bot_disabled,
)
from arena.storage.games import (
    get_game,
    get_game_record,
    list_faults_for_version,
    list_games,
    list_games_for_version,
    record_game_set_result,
    seat_filter,
)
from arena.storage.ratings import (
    append_history,
    clear_history,
    get_ratings,
    next_rated_seq,
    place_in_rating_order,
    rated_rulesets,
    rating_history,
    replace_ratings,
    store_rating_pass,
)
from arena.storage.tournaments import (
    create_tournament,
    get_game_set,
    get_tournament,
    list_game_sets,
    list_tournaments,
    mark_set_failed,
    mark_set_running,
    set_tournament_state,
    tournament_progress,
)
from arena.storage.values import (
    MAX_SEED,
    FaultInfo,
    GameResult,
    HistoryEntry,
    PlannedSet,
    Progress,
    RatingRow,
    VersionKey,
    game_id,
    game_set_id,
    new_tournament_id,
    parse_ref,
)

__all__ = [
    "MAX_SEED",
    "FaultInfo",
    "GameResult",
    "HistoryEntry",
    "PlannedSet",
    "Progress",
    "RatingRow",
    "VersionKey",
    "active_versions",
    "add_bot_version",
    "append_history",
    "clear_history",
    "create_tournament",
    "disable_bot",
    "find_bot",
    "game_id",
    "game_set_id",
    "get_bot",
    "get_game",
    "get_game_record",
    "get_game_set",
    "get_ratings",
    "get_tournament",
    "get_version",
    "list_bots",
    "list_faults_for_version",
    "list_game_sets",
    "list_games",
    "seat_filter",
    "list_games_for_version",
    "list_tournaments",
    "mark_set_failed",
    "mark_set_running",
    "new_tournament_id",
    "next_rated_seq",
    "parse_ref",
    "place_in_rating_order",
    "rated_rulesets",
    "rating_history",
    "record_game_set_result",
    "replace_ratings",
    "resolve_version_id",
    "set_bot_disabled",
    "set_tournament_state",
    "store_rating_pass",
    "tournament_progress",
]
