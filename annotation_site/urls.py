from django.conf import settings
from django.contrib import admin
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path, re_path

from annotation_site.docs_site import docs_page

admin.site.site_header = "Reflection coherence studies"
admin.site.site_title = "Reflection studies admin"
admin.site.index_title = "Studies, materials and annotators"


def favicon(request):
    """Browsers ask for /favicon.ico on every page (the admin's too): the site's icon."""
    return redirect(static("img/favicon.svg"), permanent=True)


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/", include("annotation_site.api_urls")),
    path("dashboard/", include("analysis.urls")),
    # The documentation site, as `manage.py build_docs` built it (annotation_site/docs_site.py).
    re_path(r"^docs/(?P<path>.*)$", docs_page, name="docs"),
    path("", include("studies.urls")),
]

if settings.BENCH_FLOOR_VIEW:  # benchmarks only: see annotation_site/bench_views.py
    from annotation_site.bench_views import floor

    urlpatterns.insert(0, path("bench/floor/", floor, name="bench-floor"))
