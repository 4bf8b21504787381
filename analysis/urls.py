from django.urls import path

from . import dataset_views, item_views, report_views, views

app_name = "analysis"

urlpatterns = [
    path("<slug:slug>/", views.dashboard, name="dashboard"),
    path("<slug:slug>/runs/", views.run_start, name="run_start"),
    path("<slug:slug>/scores/", views.scores_compute, name="scores_compute"),
    path("<slug:slug>/items.csv", item_views.items_csv, name="items_csv"),
    path("<slug:slug>/README.md", dataset_views.dataset_card_download, name="dataset_card"),
    path("<slug:slug>/dataset.zip", dataset_views.dataset_download, name="dataset"),
    path("<slug:slug>/status/", views.run_status, name="run_status"),
    path("<slug:slug>/runs/<int:run_id>/report.json", report_views.report_json, name="report_json"),
    path("<slug:slug>/runs/<int:run_id>/<slug:plot>.svg", report_views.plot_svg, name="plot_svg"),
    path(
        "<slug:slug>/runs/<int:run_id>/<slug:table>.csv",
        report_views.report_table,
        name="table_csv",
    ),
]
