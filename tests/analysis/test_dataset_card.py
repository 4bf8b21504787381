"""The dataset card and the dataset zip: what the card says of the study, its header as
dataset hubs read it, and every download path (the function, the admin's links, the API,
the command)."""

import io
import zipfile
from decimal import Decimal
from io import StringIO

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from django.db.models import Value
from django.db.models.functions import Concat
from django.urls import reverse

from analysis.dataset_card import dataset_card, size_band
from analysis.services import analysis_run_compute
from studies.exports import ExportOptions, export_rows
from studies.models import Annotator, Role, Stage, StagePay, Study
from tests.factories import user_with_role
from tests.studies.typed_helpers import assert_same_as_csv, parquet_frame

pytestmark = pytest.mark.django_db


def header_and_body(card: str) -> tuple[dict, str]:
    assert card.startswith("---\n")
    header, body = card[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


@pytest.fixture
def published(shared_annotated_study):
    study = shared_annotated_study
    Study.objects.filter(pk=study.pk).update(
        data_license="cc-by-4.0", data_languages="en, no", description="INTERNAL: pay later"
    )
    study.refresh_from_db()
    first = study.stages.get(position=1)
    StagePay.objects.create(
        stage=first, group=study.groups.get(name="Expert"), unit="hour", amount=Decimal("30"),
        currency="GBP", minimum_hourly_rate=Decimal("12"),
    )  # fmt: skip
    return study


def test_the_header_is_what_dataset_hubs_read(published):
    header, _ = header_and_body(dataset_card(published))
    rows = len(list(export_rows(study=published, options=ExportOptions(extended=True)))) - 1
    assert rows == 108
    assert header == {
        "pretty_name": "Pilot study",
        "license": "cc-by-4.0",
        "language": ["en", "no"],  # quoted: a bare no is false in YAML 1.1
        "size_categories": ["n<1K"],
        "task_categories": ["text-classification"],
        "annotations_creators": ["other"],
        "tags": ["human-evaluation", "counselling", "reflections", "coherence"],
        "configs": [
            {
                "config_name": "coherence",
                "data_files": [{"split": "train", "path": "pilot-annotations.parquet"}],
            }
        ],
    }


def test_the_body_says_who_annotated_the_pay_protocol_and_files(published):
    _, body = header_and_body(dataset_card(published))
    assert "### `pilot-annotations.parquet` (108 rows)" in body
    assert "| `coherent_and_context_consistent` | boolean |" in body
    assert "| `empathy` | integer |" in body
    assert "| Expert | 4 | Invitation link: 4 |" in body
    assert "| Layperson | 4 | Invitation link: 4 |" in body
    assert "| GPT-2 stage | Expert | 30.00 GBP per hour | 12.00 GBP |" in body
    assert (
        "1. **GPT-2 stage** (Coherence protocol): a batch is one dialogue context and its "
        "candidates, shuffled, each judged coherent or not; 3 annotators of each group take "
        "each batch; groups: Expert, Layperson; wait before the stage: Expert 3 days; "
        "Layperson 3 days; 3 of its 3 batches hold a hidden attention check."
    ) in body
    assert "   After Yes: an empathy rating from 1 to 5 (1 = disagree," in body
    assert "No analysis has been run yet" in body
    assert "## Licence\n\nCC BY 4.0.\n" in body
    assert "Describe the dataset here" in body
    assert "@" not in body  # no e-mail address, the contact's neither


def test_the_agreement_comes_from_the_newest_finished_run(published):
    run = analysis_run_compute(study=published)
    card = dataset_card(published)
    _, body = header_and_body(card)
    assert f"from analysis run {run.pk} of" in body
    coherence = run.result["groups"]["Expert"]["stages"]["GPT-2 stage"]["coherence"]
    fleiss = f"{coherence['fleiss_kappa']:.3f}"
    row = next(line for line in body.splitlines() if line.startswith("| Expert | GPT-2 stage |"))
    assert f"| {fleiss} [" in row
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == str(run.result["groups"]["Expert"]["stages"]["GPT-2 stage"]["n_items"])
    assert len(cells) == 8


def test_crowd_workers_make_it_crowdsourced(published):
    Annotator.objects.filter(study=published, group__name="Layperson").update(
        platform="prolific", platform_participant_id=Concat(Value("PID-"), "pseudonym")
    )
    header, body = header_and_body(dataset_card(published))
    assert header["annotations_creators"] == ["crowdsourced"]
    assert "| Layperson | 4 | Prolific: 4 |" in body
    assert "PID-" not in body


def test_size_bands():
    assert [size_band(n) for n in (0, 999, 1_000, 99_999, 100_000, 2_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M",
    ]  # fmt: skip


def test_the_zip_holds_the_card_and_the_files_from_every_path(published, client, tmp_path):
    client.force_login(user_with_role(published, Role.ANALYST))
    response = client.get(reverse("analysis:dataset", args=[published.slug]))
    assert response.status_code == 200
    assert 'filename="pilot-dataset.zip"' in response["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        assert archive.namelist() == ["README.md", "pilot-annotations.parquet"]
        card = archive.read("README.md").decode()
        frame = parquet_frame(archive.read("pilot-annotations.parquet"))
    assert card == dataset_card(published)
    rows = [list(r) for r in export_rows(study=published, options=ExportOptions(extended=True))]
    assert_same_as_csv(frame, rows)

    response = client.get(reverse("analysis:dataset_card", args=[published.slug]))
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response.content.decode() == card
    api = client.get(f"/api/studies/{published.slug}/dataset-card/", HTTP_ACCEPT="text/markdown")
    assert api.status_code == 200 and api.content.decode() == card
    api = client.get(f"/api/studies/{published.slug}/dataset/", HTTP_ACCEPT="application/zip")
    assert api.status_code == 200
    with zipfile.ZipFile(io.BytesIO(b"".join(api.streaming_content))) as archive:
        assert archive.read("README.md").decode() == card

    out = StringIO()
    call_command("export_dataset", published.slug, "--card", stdout=out)
    assert out.getvalue() == card
    target = tmp_path / "dataset.zip"
    call_command("export_dataset", published.slug, "--out", str(target), stderr=StringIO())
    with zipfile.ZipFile(target) as archive:
        assert archive.namelist() == ["README.md", "pilot-annotations.parquet"]
    with pytest.raises(CommandError, match=r"pass --out PATH\.zip"):
        call_command("export_dataset", published.slug)
    with pytest.raises(CommandError, match='No study with slug "nope"'):
        call_command("export_dataset", "nope", "--card")


def test_a_viewer_may_not_download_the_dataset(published, client):
    client.force_login(user_with_role(published, Role.VIEWER))
    for name in ("analysis:dataset", "analysis:dataset_card"):
        response = client.get(reverse(name, args=[published.slug]))
        assert response.status_code == 403
    assert client.get(f"/api/studies/{published.slug}/dataset/").status_code == 403


def test_the_admin_export_page_links_the_card_and_the_dataset(published, admin_client):
    page = admin_client.get(reverse("admin:studies_study_export", args=[published.pk]))
    text = page.content.decode()
    assert reverse("analysis:dataset_card", args=[published.slug]) in text
    assert reverse("analysis:dataset", args=[published.slug]) in text


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("data_languages", "English", "Give ISO 639 codes of two or three lower-case letters"),
        ("data_languages", "en,, de", "Give ISO 639 codes"),
        ("data_license", "gpl", "is not a valid choice"),
    ],
)
def test_a_bad_licence_or_language_is_refused_and_nothing_is_written(
    published, field, value, message
):
    published.refresh_from_db()
    setattr(published, field, value)
    with pytest.raises(ValidationError, match=message):
        published.full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=published.pk).update(**{field: value})
    published.refresh_from_db()
    assert (published.data_license, published.data_languages) == ("cc-by-4.0", "en, no")


def test_only_the_texts_meant_for_publishing_are_in_it(published):
    assert "INTERNAL" not in dataset_card(published)
    Study.objects.filter(pk=published.pk).update(
        data_description="Judgements of reflections.", title='Pilot "x"\x85 study'
    )
    published.refresh_from_db()
    header, body = header_and_body(dataset_card(published))
    assert header["pretty_name"] == 'Pilot "x"\x85 study'
    assert "\nJudgements of reflections.\n" in body and "INTERNAL" not in body


def test_a_stage_without_empathy_and_a_run_without_intervals(published):
    Stage.objects.filter(study=published).update(empathy_after_yes=False)
    run = analysis_run_compute(study=published, parameters={"bootstrap_resamples": 0})
    _, body = header_and_body(dataset_card(published))
    assert "After Yes" not in body
    assert f"from analysis run {run.pk} of" in body
    assert "bootstrap intervals" not in body and " [" not in body.split("## Agreement")[1]
