from django.urls import path

from . import item_views, report_views, views

app_name = "analysis"

urlpatterns = [
    path("<slug:slug>/", views.dashboard, name="dashboard"),
    path("<slug:slug>/runs/", views.run_start, name="run_start"),
    path("<slug:slug>/scores/", views.scores_compute, name="scores_compute"),
    path("<slug:slug>/items.csv", item_views.items_csv, name="items_csv"),
    path("<slug:slug>/status/", views.run_status, name="run_status"),
    path("<slug:slug>/runs/<int:run_id>/report.json", report_views.report_json, name="report_json"),
    path("<slug:slug>/runs/<int:run_id>/<slug:plot>.svg", report_views.plot_svg, name="plot_svg"),
    path(
        "<slug:slug>/runs/<int:run_id>/<slug:table>.csv",
        report_views.report_table,
        name="table_csv",
    ),
]
