"""The *Usage* page (issue 34): a person's own AI use by UTC day and model, from the turns'
records; and what the daily budget counts (today's turns of the person who asked)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from spark_ide.pairing.models import Session, Turn
from spark_ide.pairing.services import session_create
from spark_ide.pairing.usage import day_start, spent
from spark_ide.workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(django_user_model: Any) -> tuple[Any, Any, Session]:
    ada = django_user_model.objects.create_user(username="ada", password="pw-ada-123")
    bo = django_user_model.objects.create_user(username="bo", password="pw-bo-1234")
    workspace = workspace_create(owner=ada, name="w", files={"a.py": "A = 1\n"})
    return ada, bo, session_create(workspace=workspace, by=ada)


def turn(session: Session, author: Any, name: str, *, model: str, days_ago: int = 0, cost: str | None = "0.01",
         inp: int = 1_000, cached: int = 0, out: int = 100, estimated: bool = False) -> None:
    Turn.objects.create(
        id=name, session=session, author=author, prompt="p", metrics={"tokens": out, "model": model},
        input_tokens=inp, cached_input_tokens=cached, output_tokens=out, usage_estimated=estimated,
        cost_usd=None if cost is None else Decimal(cost),
    )
    if days_ago:
        Turn.objects.filter(pk=name).update(created_at=timezone.now() - timedelta(days=days_ago))


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_usage_page_shows_ones_own_use_by_day_and_model(people: tuple[Any, Any, Session]) -> None:
    ada, bo, session = people
    turn(session, ada, "a1", model="gpt-test", inp=2_000, cached=500, out=300, cost="0.0125")
    turn(session, ada, "a2", model="gpt-test", inp=1_000, out=100, cost="0.0050")
    turn(session, ada, "a3", model="smollm2", cost=None, estimated=True)
    turn(session, ada, "a4", model="gpt-test", days_ago=1, cost="0.1000")
    turn(session, bo, "b1", model="gpt-test", inp=99_999, cost="9.99")  # someone else's: never on ada's page
    page = signed_in(ada).get("/usage/")
    assert page.status_code == 200
    html = page.content.decode()
    today, yesterday = timezone.now().date().isoformat(), (timezone.now() - timedelta(days=1)).date().isoformat()
    rows = [part.split("</tr>")[0] for part in html.split("<tr data-day=")[1:]]
    assert [row.split('"')[1:4:2] for row in rows] == [[today, "gpt-test"], [today, "smollm2"], [yesterday, "gpt-test"]]
    gpt_today = rows[0]
    assert '<td class="number">2</td>' in gpt_today
    assert 'data-field="input">3,000<' in gpt_today and 'data-field="cached">500<' in gpt_today
    assert 'data-field="output">400<' in gpt_today and 'data-field="cost">$0.0175<' in gpt_today
    assert 'data-field="input">≈1,000<' in rows[1] and 'data-field="cost">—<' in rows[1]
    total = html.split('id="usage-total"')[1].split("</tr>")[0]
    assert "<th class=\"number\">4</th>" in total and 'data-field="cost">$0.1175<' in total
    assert "99,999" not in html and "$9.99" not in html
    assert 'href="/usage/" id="usage-link"' in html  # in the nav of every page
    theirs = signed_in(bo).get("/usage/").content.decode()
    assert theirs.count("<tr data-day=") == 1 and 'data-field="input">99,999<' in theirs


def test_the_usage_page_wants_a_signed_in_person(people: tuple[Any, Any, Session]) -> None:
    response = Client().get("/usage/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_daily_budget_counts_todays_turns_of_the_person_who_asked(people: tuple[Any, Any, Session]) -> None:
    ada, bo, session = people
    turn(session, ada, "a1", model="m", cost="0.25")
    turn(session, ada, "a2", model="m", cost=None)
    turn(session, ada, "a3", model="m", cost="5.00", days_ago=1)  # yesterday's: not today's
    turn(session, bo, "b1", model="m", cost="1.00")  # in the same session, but bo asked
    found = spent(str(session.id), ada.pk)
    assert found.today_usd == Decimal("0.25")
    assert found.resets_at == day_start() + timedelta(days=1)
    assert found.session.input_tokens == 4_000 and found.session.cost_usd == Decimal("6.25")
    assert spent(str(session.id), None).today_usd == 0
