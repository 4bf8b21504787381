"""``{% admin_index_panels as panels %}``: what the admin's index adds for roles
(``studies.admin.index``)."""

from django import template

from ..admin.index import coding_pages_for, ownerless_studies_for

register = template.Library()


@register.simple_tag(takes_context=True)
def admin_index_panels(context) -> dict:
    user = context["request"].user
    return {"coding_pages": coding_pages_for(user), "ownerless": ownerless_studies_for(user)}
