"""The API's parts on their own, without a model or a server: the limits and text checks, the handle table over
Writer contexts, and the sessions' lifetime (idle time, expiry, the reaper, the request deadline) on a fake clock."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from dasher_rnn.adapt.writer import Context
from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.api.handles import HandleTable, existing_node, subtree_size
from dasher_rnn.api.lifetime import ENDED_KEPT, Lifetime, Usage, reap, reap_period, within
from dasher_rnn.api.limits import ApiError, Limits, check_count, check_text
from dasher_rnn.predictor.tree import Node

ALPHABET = load_alphabet("english")


class Clock:
    """A clock that moves only when the test says."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def node(parent: Node | None = None, ch: str = "a") -> Node:
    """A tree node (no tree behind it: the handle table only looks at ``children`` and ``released``)."""
    made = Node(tree=None, parent=parent, symbol=ALPHABET.index(ch), depth=0 if parent is None else parent.depth + 1)
    if parent is not None:
        parent.children[made.symbol] = made
    return made


def released(n: Node) -> None:
    n.released = True
    for child in n.children.values():
        released(child)


# -- limits --------------------------------------------------------------------------------------------------
def test_check_text_normalises_and_refuses_long_text_and_unknown_characters():
    limits = Limits(max_text=5)
    assert check_text("\u201chi\u201d", ALPHABET, limits) == '"hi"'
    with pytest.raises(ApiError) as long:
        check_text("abcdef", ALPHABET, limits, "committed text")
    assert long.value.status == 413 and long.value.code == "text_too_long" and "committed text" in long.value.message
    with pytest.raises(ApiError) as spelled_out:  # 2 characters sent, 6 once normalised ("\ufb03" is "ffi")
        check_text("\ufb03\ufb03", ALPHABET, limits)
    assert spelled_out.value.status == 413 and "normalised" in spelled_out.value.message
    assert check_text("\ufb03", ALPHABET, limits) == "ffi"
    with pytest.raises(ApiError) as unknown:
        check_text("a\u2603", ALPHABET, limits)
    assert unknown.value.status == 422 and unknown.value.code == "unknown_character"
    assert unknown.value.body()["error"]["character"] == "\u2603" and unknown.value.body()["error"]["position"] == 1
    assert check_text("a\u2603", ALPHABET, limits, reject_unknown=False) == "a\u2603"
    check_count(3, 3, "contexts")
    with pytest.raises(ApiError) as many:
        check_count(4, 3, "contexts")
    assert many.value.status == 413 and many.value.code == "too_many_contexts"


# -- the handle table ----------------------------------------------------------------------------------------
def test_a_context_has_one_handle_and_a_released_one_is_unknown():
    table = HandleTable("s1", max_handles=10, max_nodes=100)
    root = Context(node=node(), ppm=None)
    child = Context(node=node(root.node, "b"), ppm=None)
    r = table.add(root, root=True)
    c = table.add(child)
    assert table.add(Context(node=child.node, ppm=None)) == c  # the same node: the same handle
    assert table.is_root(r) and not table.is_root(c)
    assert set(table) == {r, c} and len(table) == 2 and c in table
    assert table.get(c) is child
    assert table.has_handle(child.node) and not table.has_handle(None)
    # contexts without a tree node (PPM, uniform) get a handle each time
    assert table.add(Context(node=None, ppm=None)) != table.add(Context(node=None, ppm=None))
    released(root.node)
    with pytest.raises(ApiError) as gone:
        table.get(c)
    assert gone.value.status == 404 and gone.value.code == "unknown_context" and "session s1" in gone.value.message
    assert c not in table and not table.has_handle(child.node)


def test_take_removes_a_handle_for_release_and_discard_keeps_the_context():
    table = HandleTable("s1", max_handles=10, max_nodes=100)
    root = Context(node=node(), ppm=None)
    child = Context(node=node(root.node, "b"), ppm=None)
    r, c = table.add(root, root=True), table.add(child)
    table.discard(c)
    table.discard(c)  # a second time: nothing
    assert c not in table and not table.has_handle(child.node)
    again = table.add(child)
    assert again != c and table.get(again) is child  # a new handle on the same context
    assert table.take(r) is root
    assert r not in table and not table.is_root(r)
    with pytest.raises(ApiError):
        table.take(r)


def test_the_handle_limit_counts_only_live_handles():
    table = HandleTable("s1", max_handles=3, max_nodes=100)
    first, second = Context(node=node(), ppm=None), Context(node=node(), ppm=None)
    table.add(first, root=True)
    table.add(second, root=True)
    asyncio.run(table.make_room(1, 0))  # 2 + 1 fit
    with pytest.raises(ApiError) as full:
        asyncio.run(table.make_room(2, 0))
    assert full.value.status == 429 and full.value.code == "too_many_handles"
    released(first.node)  # its handle is dead: the table forgets it when it needs room
    asyncio.run(table.make_room(2, 0))
    assert len(table) == 1 and table.roots == {2}


def test_the_node_limit_recounts_the_trees_under_the_roots():
    table = HandleTable("s1", max_handles=100, max_nodes=5)
    root = node()
    kids = [node(root, ch) for ch in "abc"]
    node(kids[0], "d")
    assert subtree_size(root) == 5
    table.add(Context(node=root, ppm=None), root=True)
    table.nodes = 5
    with pytest.raises(ApiError) as full:
        asyncio.run(table.make_room(0, 1))
    assert full.value.status == 429 and full.value.code == "too_many_nodes" and table.nodes == 5
    released(kids[0])
    asyncio.run(table.make_room(0, 2))  # recounted: 3 nodes
    assert table.nodes == 3


def test_existing_node_walks_the_tree_without_creating_anything():
    root = node()
    b = node(root, "b")
    bc = node(b, "c")
    context = Context(node=root, ppm=None)
    assert existing_node(context, "bc", ALPHABET) is bc
    assert existing_node(context, "", ALPHABET) is root
    assert existing_node(context, "x", ALPHABET) is None and existing_node(context, "bx", ALPHABET) is None
    assert existing_node(Context(node=None, ppm=None), "b", ALPHABET) is None
    released(bc)
    assert existing_node(context, "bc", ALPHABET) is None
    assert b.children == {bc.symbol: bc}  # nothing made or dropped


# -- lifetime ------------------------------------------------------------------------------------------------
def test_usage_is_idle_only_without_requests_or_websockets():
    clock = Clock()
    usage = Usage(clock)
    clock.now += 7
    assert usage.idle_for(clock()) == 7
    with usage.in_use() as used:
        assert used is usage
        clock.now += 50
        assert usage.idle_for(clock()) == 0  # a request runs
    assert usage.idle_for(clock()) == 0  # it ended just now
    clock.now += 3
    usage.connections += 1
    assert usage.idle_for(clock()) == 0
    usage.connections -= 1
    assert usage.idle_for(clock()) == 3
    usage.touch()
    assert usage.idle_for(clock()) == 0
    assert usage.idle_for(clock() - 10) == 0  # never negative


class FakeSession(Usage):
    def __init__(self, clock: Clock, profile: str | None = None, fail: bool = False) -> None:
        super().__init__(clock)
        self.profile, self.fail = profile, fail
        self.closed_with: list[bool] = []
        self.lifetime: Lifetime | None = None
        self.was_closing: bool | None = None

    async def end(self, save: bool = True) -> bool:
        self.was_closing = self.lifetime is not None and self in self.lifetime.closing.values()
        self.closed_with.append(save)
        if self.fail:
            raise ApiError(507, "save_failed", "disk full")
        return save and self.profile is not None


def test_expire_idle_closes_the_sessions_unused_for_the_timeout_and_remembers_them():
    clock = Clock()
    lifetime = Lifetime(60.0, clock)
    old, busy, fresh, anonymous = FakeSession(clock, "old"), FakeSession(clock), FakeSession(clock), FakeSession(clock)
    for s in (old, busy, fresh, anonymous):
        s.lifetime = lifetime
    sessions = {"old": old, "busy": busy, "anonymous": anonymous}
    clock.now += 60
    sessions["fresh"] = fresh
    fresh.touch()
    busy.connections = 1  # a WebSocket is open
    closed = asyncio.run(lifetime.expire_idle(lambda: sessions))
    assert sorted(closed) == ["anonymous", "old"]
    assert set(sessions) == {"busy", "fresh"}
    assert old.closed_with == [True] and old.was_closing  # it kept its place among those closing while it saved
    assert not lifetime.closing and busy.closed_with == [] and fresh.closed_with == []
    assert set(lifetime.ended) == {"old", "anonymous"}
    with pytest.raises(ApiError) as late:
        lifetime.check_ended("old")
    assert late.value.status == 404 and late.value.code == "session_expired" and "60 s" in late.value.message
    assert "profile 'old' was saved" in late.value.message
    with pytest.raises(ApiError) as late:
        lifetime.check_ended("anonymous")
    assert "no profile" in late.value.message and "saved" not in late.value.message  # never claims a save
    lifetime.check_ended("fresh")  # not ended: no error
    assert asyncio.run(lifetime.expire_idle(lambda: sessions, clock() + 59)) == []
    assert asyncio.run(lifetime.expire_idle(lambda: sessions, clock() + 61)) == ["fresh"]


def test_an_idle_session_whose_save_fails_is_kept_open_and_tried_again_after_another_timeout(caplog):
    clock = Clock()
    lifetime = Lifetime(60.0, clock)
    broken = FakeSession(clock, "broken", fail=True)
    sessions = {"broken": broken}
    clock.now += 60
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(lifetime.expire_idle(lambda: sessions)) == []
    assert sessions == {"broken": broken} and broken.closed_with == [True]  # back among the open sessions
    assert "broken" not in lifetime.ended and not lifetime.closing
    assert "kept open: disk full" in caplog.text and "tried again" in caplog.text
    assert broken.idle_for(clock()) == 0  # its idle time starts again: not tried at every look
    assert asyncio.run(lifetime.expire_idle(lambda: sessions, clock() + 59)) == []
    assert broken.closed_with == [True]
    broken.fail = False
    assert asyncio.run(lifetime.expire_idle(lambda: sessions, clock() + 60)) == ["broken"]
    assert sessions == {} and broken.closed_with == [True, True]


def test_a_session_closed_by_its_client_is_remembered_saying_whether_its_profile_was_saved():
    lifetime = Lifetime(60.0, Clock())
    lifetime.remember_closed("a", "anna", True)
    lifetime.remember_closed("b", "bob", False)
    lifetime.remember_closed("c", None, False)
    messages = {}
    for sid in "abc":
        with pytest.raises(ApiError) as gone:
            lifetime.check_ended(sid)
        assert gone.value.status == 404 and gone.value.code == "session_closed"
        messages[sid] = gone.value.message
    assert "'anna' was saved" in messages["a"] and "'bob' was not saved" in messages["b"]
    assert "no profile" in messages["c"]


def test_no_timeout_never_expires_and_the_ended_ids_kept_are_bounded():
    clock = Clock()
    never = Lifetime(0.0, clock)
    sessions = {"a": FakeSession(clock)}
    assert asyncio.run(never.expire_idle(lambda: sessions, clock() + 1e9)) == []
    assert list(sessions) == ["a"]
    lifetime = Lifetime(1.0, clock)
    for i in range(ENDED_KEPT + 5):
        lifetime.remember_expired(f"s{i}", 1.0, None)
    assert len(lifetime.ended) == ENDED_KEPT and "s0" not in lifetime.ended and f"s{ENDED_KEPT + 4}" in lifetime.ended


def test_the_reaper_keeps_looking_after_a_failure_until_cancelled():
    assert reap_period(1800) == 30.0 and reap_period(0.01) == 0.05 and reap_period(2) == 0.5

    async def run() -> tuple[list[float], int]:
        periods: list[float] = []
        calls = 0
        third = asyncio.Event()

        async def sleep(seconds: float) -> None:  # no real waiting: each "period" passes at once
            periods.append(seconds)
            await asyncio.sleep(0)

        async def expire() -> None:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("a failure is logged; the reaper goes on")
            if calls == 3:
                third.set()
                await asyncio.Event().wait()  # parked here until cancelled

        task = asyncio.create_task(reap(expire, 0.5, sleep))
        await third.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return periods, calls

    periods, calls = asyncio.run(run())
    assert calls == 3 and periods == [0.5, 0.5, 0.5]


def test_within_stops_work_past_the_request_time_limit():
    async def run() -> None:
        assert await within(Limits(request_timeout_s=0), asyncio.sleep(0, "done")) == "done"  # 0: no limit
        assert await within(Limits(request_timeout_s=30), asyncio.sleep(0, "done")) == "done"
        stopped = threading.Event()

        async def forever() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                stopped.set()

        with pytest.raises(ApiError) as late:
            await within(Limits(request_timeout_s=0.01), forever())
        assert late.value.status == 503 and late.value.code == "timeout" and stopped.is_set()

    asyncio.run(run())


def test_a_sessions_writer_saves_its_profile_in_the_background_as_the_apps_does(tiny_model_dir, tmp_path):
    """A killed server loses at most the last AUTOSAVE_S of a session's learning, as the app does."""
    from dasher_rnn.adapt.writer import AUTOSAVE_S
    from dasher_rnn.api.limits import Limits
    from dasher_rnn.api.registry import Registry

    registry = Registry(tiny_model_dir, Limits(), tmp_path)
    assert registry._config(model="rnn", profile="anna").autosave_s == AUTOSAVE_S


# -- the WebSocket table -------------------------------------------------------------------------------------------
def test_the_socket_table_closes_the_idlest_to_make_room_and_refuses_only_when_all_are_busy():
    from dasher_rnn.api.sockets import CLOSE_CODE, SocketTable

    clock = Clock()
    closed: list[str] = []
    table = SocketTable(per_session=2, per_client=3, clock=clock)

    def admit(name: str, session: str = "s", client: str = "c"):
        socket = table.admit(session, client, lambda code, reason: closed.append((name, code, reason)))
        clock.now += 1
        return socket

    a, b = admit("a"), admit("b")
    with table.answering(a):
        clock.now += 1
    c = admit("c")  # b is idle longest (a answered a message since)
    assert [name for name, *_ in closed] == ["b"] and closed[0][1] == CLOSE_CODE and len(table) == 2
    table.remove(b)
    with table.answering(a), table.answering(c):  # every one on the session busy: the new one is refused
        with pytest.raises(ApiError) as refused:
            admit("d")
        assert refused.value.status == 429 and refused.value.code == "too_many_websockets"
    admit("e", session="t")
    admit("f", session="u")  # the client's fourth: its idlest (a or c, whichever was used first) makes room
    assert len(closed) == 2 and len(table) == 3
    assert table.close_idle(idle_for=1000) is False  # none idle that long
    assert table.close_idle(idle_for=0) is True and len(table) == 2
