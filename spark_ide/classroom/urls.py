from django.urls import path

from . import views

urlpatterns = [
    path("classroom/signup/", views.teacher_signup, name="teacher-signup"),
    path("classroom/", views.course_list, name="course-list"),
    path("classroom/new", views.course_new, name="course-new"),
    path("classroom/<str:course_id>/", views.course_page, name="course"),
    path("classroom/<str:course_id>/policy", views.course_policy, name="course-policy"),
    path("classroom/<str:course_id>/push", views.course_push, name="course-push"),
    path("classroom/<str:course_id>/archive", views.course_archive, name="course-archive"),
    path("classroom/<str:course_id>/delete/<str:what>", views.course_delete, name="course-delete"),
    path("classroom/<str:course_id>/students", views.course_students, name="course-students"),
    path("classroom/<str:course_id>/students/<str:enrollment_id>/watch", views.course_watch, name="course-watch"),
    path("classroom/<str:course_id>/prompts", views.course_prompts, name="course-prompts"),
    path("join/", views.join_form, name="join"),
    path("join/<str:code>", views.course_join, name="course-join"),
]
