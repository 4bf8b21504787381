"""Periodic jobs of the assignment protocol (scheduled in settings.CELERY_BEAT_SCHEDULE).

Each task imports the service it calls inside its body, so loading the task modules
(as a worker does at start) loads no services and the tasks sit above them.
"""

from celery import shared_task


@shared_task(name="studies.expire_overdue_assignments", ignore_result=True)
def expire_overdue_assignments_task() -> int:
    """Release the slots of batches not submitted in time (also done lazily on claims)."""
    from .services import assignments_expire_overdue

    return assignments_expire_overdue()


@shared_task(name="studies.send_unlock_notifications", ignore_result=True)
def send_unlock_notifications_task() -> int:
    """E-mail annotators whose waiting period has ended (only those with an address)."""
    from .services import unlock_notifications_send

    return unlock_notifications_send()


@shared_task(name="studies.decide_gates", ignore_result=True)
def decide_gates_task() -> int:
    """Decide the items of every gated stage whose ratings are all in, and form the
    batches of contexts now decided (also done after each submission)."""
    from .services.gates import gate_decisions_make

    return gate_decisions_make()
