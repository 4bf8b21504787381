from django.urls import path

from . import views

app_name = "studies"

urlpatterns = [
    path("", views.index, name="index"),
    path("i/<str:token>/", views.invitation, name="invitation"),
]
