// Inside a crowd platform's frame that refuses cookies, the study's pages carry the
// annotator through a signed token in the URL (studies/middleware.py): add it to every
// link and form of this page that stays on the site, and to htmx's requests.
(function () {
  "use strict";
  var NAME = "ct";
  function token() { return document.body && document.body.dataset.crowdToken; }
  function withToken(url) {
    var value = token();
    if (!value || !url) { return url; }
    var target = new URL(url, window.location.href);
    if (target.origin !== window.location.origin || target.searchParams.has(NAME)) { return url; }
    target.searchParams.set(NAME, value);
    return target.pathname + target.search + target.hash;
  }
  function carry(root) {
    root.querySelectorAll("a[href]").forEach(function (a) {
      a.setAttribute("href", withToken(a.getAttribute("href")));
    });
    root.querySelectorAll("form").forEach(function (form) {
      var action = form.getAttribute("action") || window.location.pathname + window.location.search;
      form.setAttribute("action", withToken(action));
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    carry(document);
    document.body.addEventListener("htmx:configRequest", function (event) {
      event.detail.path = withToken(event.detail.path);
    });
    document.body.addEventListener("htmx:load", function (event) { carry(event.detail.elt); });
  });
})();
