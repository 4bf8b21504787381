"""The REST API of studies (interfaces only; docs/developers/api.md).

Each view validates its input with a nested serializer, calls a selector or one
service, and renders with an output serializer. Annotators appear by pseudonym only:
no serializer here has a field for an e-mail, a platform id or an access token.
Permissions, errors and pagination (shared with the analysis API): ``studies.api_framework``; routes:
``annotation_site.api_urls``.
"""

from .annotations import AssignmentListApi, AssignmentRejectApi, JudgementListApi
from .exports import AnnotationExportApi
from .materials import BatchListApi, ContextListApi, MaterialsImportApi
from .studies import (
    GroupListApi,
    ProgressApi,
    StageListApi,
    StudyDetailApi,
    StudyListApi,
    StudyOpenApi,
)

__all__ = [
    "AnnotationExportApi",
    "AssignmentListApi",
    "AssignmentRejectApi",
    "BatchListApi",
    "ContextListApi",
    "GroupListApi",
    "JudgementListApi",
    "MaterialsImportApi",
    "ProgressApi",
    "StageListApi",
    "StudyDetailApi",
    "StudyListApi",
    "StudyOpenApi",
]
