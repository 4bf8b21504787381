// The coding page's keys: 1-9 and 0 toggle the first ten codes, U marks the
// description uninformative, Enter or N saves and moves on, P goes back. Keys typed
// into a text box, a list or a link never count. Ticking a code unticks
// "uninformative" and the other way round. Without JavaScript the checkboxes,
// buttons and links do the same.
(function () {
  "use strict";
  document.documentElement.classList.add("js"); // the keys are shown (site.css)
  var TYPING = /^(TEXTAREA|SELECT)$/;
  var KEYS = "1234567890";

  function isTyping(target) {
    if (!target || !target.tagName) return false;
    if (target.isContentEditable || TYPING.test(target.tagName)) return true;
    if (target.tagName === "INPUT") {
      return ["checkbox", "radio", "button", "submit", "hidden"].indexOf(target.type) < 0;
    }
    return false;
  }

  function form() {
    return document.querySelector("form[data-coding]");
  }

  function codes(f) {
    return Array.prototype.slice.call(f.querySelectorAll("input[data-code]"));
  }

  function toggle(box) {
    box.checked = !box.checked;
    box.dispatchEvent(new Event("change", { bubbles: true }));
  }

  document.addEventListener("change", function (event) {
    var box = event.target;
    var f = form();
    if (!f || !f.contains(box) || !box.checked) return;
    if (box.hasAttribute("data-uninformative")) {
      codes(f).forEach(function (c) { c.checked = false; });
    } else if (box.hasAttribute("data-code")) {
      var u = f.querySelector("input[data-uninformative]");
      if (u) u.checked = false;
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.isComposing) return;
    if (isTyping(event.target)) return;
    var f = form();
    if (!f) return;
    var key = event.key;
    var index = KEYS.indexOf(key);
    if (index >= 0 && key.length === 1) {
      var box = codes(f)[index];
      if (box) { toggle(box); event.preventDefault(); }
      return;
    }
    var lower = key.length === 1 ? key.toLowerCase() : key;
    if (lower === "u") {
      var u = f.querySelector("input[data-uninformative]");
      if (u) { toggle(u); event.preventDefault(); }
    } else if (lower === "n" || (key === "Enter" && !/^(A|BUTTON)$/.test(event.target.tagName))) {
      event.preventDefault();
      f.requestSubmit();
    } else if (lower === "p") {
      var back = document.querySelector("#coding-panel [data-previous]");
      if (back) { event.preventDefault(); back.click(); }
    }
  });

  // After htmx swaps in the next description, keys go to the page again.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "coding-panel") {
      var heading = document.getElementById("coding-heading");
      if (heading) heading.focus();
    }
  });
})();
