"""A teacher with a course on a small template, and students who join it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from spark_ide.classroom.models import Course, Enrollment
from spark_ide.classroom.services import course_create, course_join, teacher_grant
from spark_ide.workspaces.services import workspace_create

TEMPLATE = {"main.py": "print('hello')\n", "README.md": "# Exercise 1\n"}


@pytest.fixture
def teacher(django_user_model: Any) -> User:
    user: User = django_user_model.objects.create_user(username="teach")
    teacher_grant(user)
    return user


@pytest.fixture
def course(teacher: User) -> Course:
    template = workspace_create(owner=teacher, name="Exercise 1", files=dict(TEMPLATE))
    return course_create(teacher=teacher, name="Python 101", template=template)


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def enrol(course: Course, username: str) -> Enrollment:
    student = User.objects.create_user(username=username)
    enrollment, created = course_join(course=course, user=student, display_name=username.title())
    assert created
    return enrollment
