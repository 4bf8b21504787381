"""factory_boy factories for rows the services do not need to build."""

from datetime import timedelta

import factory
from django.contrib.auth import get_user_model

from studies.models import AnnotatorGroup, Stage, Study


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Study

    slug = factory.Sequence(lambda n: f"study_{n}")
    title = factory.Sequence(lambda n: f"Study {n}")
    seed = 7


class StageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Stage

    study = factory.SubFactory(StudyFactory)
    position = factory.Sequence(lambda n: n + 1)
    name = factory.Sequence(lambda n: f"Stage {n}")
    min_wait = timedelta(days=3)


class GroupFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AnnotatorGroup

    study = factory.SubFactory(StudyFactory)
    name = factory.Sequence(lambda n: f"Group{n}x")
    pseudonym_prefix = factory.SelfAttribute("name")


class StaffUserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda n: f"researcher{n}")
    is_staff = True
    is_superuser = True
    password = factory.django.Password("pw-for-tests-only")


class StaffMemberFactory(StaffUserFactory):
    """A staff account that is not a superuser: it may do what its roles allow."""

    username = factory.Sequence(lambda n: f"member{n}")
    is_superuser = False


def user_with_role(study, role: str, **kwargs):
    """A new staff account holding ``role`` in ``study`` (and nothing else), fresh from
    the database."""
    from studies.models import StudyRole

    user = StaffMemberFactory(**kwargs)
    StudyRole.objects.create(study=study, user=user, role=role)
    return get_user_model().objects.get(pk=user.pk)
