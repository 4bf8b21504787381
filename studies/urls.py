from django.urls import path

from . import views

app_name = "studies"

urlpatterns = [
    path("", views.index, name="index"),
    path("i/<str:token>/", views.invitation, name="invitation"),
    path("s/<slug:slug>/join", views.join_without_key, name="join_without_key"),
    path("s/<slug:slug>/join/<str:key>", views.join, name="join"),
    path("s/<slug:slug>/", views.home, name="home"),
    path("s/<slug:slug>/consent/", views.consent, name="consent"),
    path("s/<slug:slug>/consent/decline/", views.decline, name="decline"),
    path("s/<slug:slug>/tutorial/", views.tutorial, name="tutorial"),
    path("s/<slug:slug>/questionnaire/", views.questionnaire, name="questionnaire"),
    path("s/<slug:slug>/training/", views.training, name="training"),
    path("s/<slug:slug>/training/<int:number>/", views.training_item, name="training_item"),
    path("s/<slug:slug>/start/", views.start, name="start"),
    path("s/<slug:slug>/done/", views.done, name="done"),
    path("s/<slug:slug>/b/<int:assignment_id>/", views.batch, name="batch"),
    path("s/<slug:slug>/b/<int:assignment_id>/<int:number>/", views.item, name="item"),
    path(
        "s/<slug:slug>/b/<int:assignment_id>/<int:number>/draft/",
        views.item_draft,
        name="item_draft",
    ),
    path("s/<slug:slug>/b/<int:assignment_id>/review/", views.review, name="review"),
    path("exports/<slug:slug>/annotations.csv", views.export_annotations, name="export"),
    path("coding/<slug:slug>/stage-<int:position>/", views.coding, name="coding"),
    path(
        "coding/<slug:slug>/stage-<int:position>/codes/",
        views.coding_code_add,
        name="coding_code_add",
    ),
    path("coding/<slug:slug>/codes.csv", views.coding_export, name="coding_export"),
    path(
        "exports/<slug:slug>/questionnaires",
        views.export_questionnaires,
        name="export_questionnaires",
    ),
]
