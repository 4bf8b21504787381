// Times in the annotator's own time zone: every <time data-local datetime="..."> (UTC,
// already rounded to the minute by the server) is rewritten with the browser's
// zone. Without JavaScript the UTC text stays.
(function () {
  "use strict";
  function localise() {
    var format;
    try {
      format = new Intl.DateTimeFormat(undefined, {
        weekday: "long", day: "numeric", month: "long", year: "numeric",
        hour: "2-digit", minute: "2-digit", timeZoneName: "short"
      });
    } catch (e) { return; }
    document.querySelectorAll("time[data-local]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when.getTime())) {
        el.textContent = format.format(when);
        el.title = el.getAttribute("datetime");
      }
    });
  }
  document.addEventListener("DOMContentLoaded", localise);
})();
