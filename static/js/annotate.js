// Progressive enhancement of the annotation form. Without it the page works as plain
// forms: every question is shown and the server checks the answer.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function checked(form, name) {
    return Array.from(form.querySelectorAll('input[name="' + name + '"]:checked')).map(function (i) { return i.value; });
  }

  function show(el, visible) {
    if (el) { el.hidden = !visible; }
  }

  // --- a Likert stage: each dimension rated on points, a slider, or "cannot judge" ---
  function dimensions(form) { return Array.from(form.querySelectorAll(".q-dimension")); }

  function sliderValue(fieldset) {
    var number = fieldset.querySelector("[data-slider-value]");
    if (!number || number.value.trim() === "") { return null; }
    var value = Number(number.value);
    var ok = Number.isInteger(value) && value >= Number(fieldset.dataset.low) && value <= Number(fieldset.dataset.high);
    return ok ? value : null;
  }

  function dimensionRated(fieldset) {
    if (fieldset.querySelector('input[type="radio"]:checked')) { return true; }
    var cannot = fieldset.querySelector('input[type="checkbox"][data-cannot-judge]');
    if (cannot && cannot.checked) { return true; }
    return sliderValue(fieldset) !== null;
  }

  function currentDimension(form) {
    var all = dimensions(form);
    var index = Number(form.dataset.current || 0);
    return all[Math.min(index, all.length - 1)];
  }

  function markCurrent(form, index) {
    var all = dimensions(form);
    if (!all.length) { return; }
    index = Math.max(0, Math.min(index, all.length - 1));
    form.dataset.current = String(index);
    all.forEach(function (fieldset, i) { fieldset.classList.toggle("current", i === index); });
  }

  // Moves the marked dimension by ``step`` and the focus to its control (the chosen
  // point, else the first; a slider's range), so the arrows work on it at once.
  function moveDimension(form, step) {
    var all = dimensions(form);
    var index = Number(form.dataset.current || 0) + step;
    if (index < 0 || index >= all.length) { return; }
    markCurrent(form, index);
    var fieldset = all[index];
    var target = fieldset.querySelector('input[type="radio"]:checked') ||
      fieldset.querySelector("[data-slider-range]:not([hidden])") ||
      fieldset.querySelector('input[type="radio"], input[type="number"]');
    if (target) { target.focus(); }
  }

  // A slider's value written to its number field (what is sent) and range control.
  function setSlider(fieldset, value) {
    var number = fieldset.querySelector("[data-slider-value]");
    var range = fieldset.querySelector("[data-slider-range]");
    var cannot = fieldset.querySelector("[data-cannot-judge]");
    number.value = value === null ? "" : String(value);
    if (range && value !== null) { range.value = String(value); range.classList.remove("unset"); }
    if (cannot && value !== null) { cannot.checked = false; }
  }

  function setupSliders(form) {
    dimensions(form).forEach(function (fieldset) {
      var range = fieldset.querySelector("[data-slider-range]");
      if (!range) { return; }
      var number = fieldset.querySelector("[data-slider-value]");
      var cannot = fieldset.querySelector("[data-cannot-judge]");
      range.hidden = false;
      range.addEventListener("input", function () {
        setSlider(fieldset, Number(range.value));
        number.dispatchEvent(new Event("change", { bubbles: true }));
      });
      number.addEventListener("input", function () {
        var value = sliderValue(fieldset);
        if (value !== null) { range.value = String(value); range.classList.remove("unset"); }
        if (cannot && number.value.trim() !== "") { cannot.checked = false; }
      });
      if (cannot) {
        cannot.addEventListener("change", function () {
          if (cannot.checked) { number.value = ""; range.classList.add("unset"); }
        });
      }
    });
    dimensions(form).forEach(function (fieldset, i) {
      fieldset.addEventListener("focusin", function () {
        if (Number(form.dataset.current) !== i) { typingStop(); }  // a number is per statement
        markCurrent(form, i);
      });
    });
    var first = dimensions(form).findIndex(function (fieldset) { return !dimensionRated(fieldset); });
    markCurrent(form, first === -1 ? 0 : first);
  }

  function updateLikert(form) {
    var all = dimensions(form);
    var missing = all.filter(function (fieldset) { return !dimensionRated(fieldset); });
    var save = form.querySelector("[data-save]");
    if (save) { save.disabled = missing.length > 0 || document.body.dataset.timeUp === "1"; }
    var hint = form.querySelector("[data-save-hint]");
    if (hint) {
      hint.textContent = !missing.length ? "" : missing.length === 1
        ? "Rate statement " + (all.indexOf(missing[0]) + 1) + " first."
        : "Rate every statement first (" + (all.length - missing.length) + " of " + all.length + " rated).";
    }
  }

  // Digits typed one after another make one rating ("1", "0": 10; "7", "5": 75 on a
  // slider). A number that cannot grow within the scale is final at once, else after a
  // pause; a final rating moves the mark to the next dimension.
  var typed = "", typedTimer = null;
  var TYPING_PAUSE_MS = 900;

  function typingStop() {
    typed = "";
    window.clearTimeout(typedTimer);
  }

  function rateTyped(form, digit) {
    var fieldset = currentDimension(form);
    if (!fieldset) { return false; }
    var low = Number(fieldset.dataset.low), high = Number(fieldset.dataset.high);
    if (typed && Number(typed + digit) > high) {
      // The number typed so far is final ("1" then "2" on ten points: 1, then 2 on
      // the next statement); the digit starts the next one's.
      typingStop();
      var note = form.querySelector("[data-key-pending]");
      if (note) { note.textContent = ""; }
      var all = dimensions(form);
      if (all.indexOf(fieldset) < all.length - 1) {
        moveDimension(form, 1);
        return rateTyped(form, digit);
      }
      return true;  // the last statement keeps its rating
    }
    var candidate = typed + digit;
    if (candidate === "0" && low > 0) { typingStop(); return false; }  // no point 0
    var value = Number(candidate);
    if (value > high) { typingStop(); return false; }
    typed = candidate;
    window.clearTimeout(typedTimer);
    if (value >= low) {
      if (fieldset.hasAttribute("data-slider")) {
        setSlider(fieldset, value);
        fieldset.querySelector("[data-slider-value]").dispatchEvent(new Event("change", { bubbles: true }));
      } else {
        var radio = fieldset.querySelector('input[type="radio"][value="' + value + '"]');
        if (radio) { radio.click(); }
      }
    }
    var note = form.querySelector("[data-key-pending]");
    if (value * 10 > high || candidate === "0") {  // it cannot grow: final
      typed = "";
      if (note) { note.textContent = ""; }
      if (value >= low) { moveDimension(form, 1); }
    } else {
      if (note) { note.textContent = typed + "… (another digit makes it larger)"; }
      typedTimer = window.setTimeout(function () {
        if (typed !== candidate) { return; }  // another key took over
        typed = "";
        if (note) { note.textContent = ""; }
        if (value >= low && currentForm() === form && currentDimension(form) === fieldset) {
          moveDimension(form, 1);
        }
      }, TYPING_PAUSE_MS);
    }
    return true;
  }

  function onLikertKey(form, key, event) {
    if (/^[0-9]$/.test(key)) {
      if (rateTyped(form, key)) { event.preventDefault(); }
      return;
    }
    typingStop();
    var fieldset = currentDimension(form);
    if (key === form.dataset.nextKey) { moveDimension(form, 1); event.preventDefault(); }
    else if (key === form.dataset.previousKey) { moveDimension(form, -1); event.preventDefault(); }
    else if (key === form.dataset.cannotJudgeKey && fieldset) {
      var cannot = fieldset.querySelector("[data-cannot-judge]");
      if (cannot) {
        if (!cannot.checked) { cannot.click(); }
        event.preventDefault();
        moveDimension(form, 1);
      }
    }
  }

  // --- a pairwise stage: A, B or a tie (and a reason where asked) ---
  function updatePairwise(form) {
    var chosen = checked(form, "choice").length === 1;
    var save = form.querySelector("[data-save]");
    if (save) { save.disabled = !chosen || document.body.dataset.timeUp === "1"; }
    var hint = form.querySelector("[data-save-hint]");
    if (hint) { hint.textContent = chosen ? "" : "Choose which response is better first."; }
  }

  // --- a ranking stage: the responses in order, best first; a response may be tied
  // with the one above it (where the stage allows ties). The rank numbers, which the
  // form sends, follow the order: 1, 2, 2, 4 with a tie in second place. ---
  function rankingItems(form) { return Array.from(form.querySelectorAll(".ranking-item")); }

  function renumber(form) {
    var items = rankingItems(form), rank = 0, ties = form.hasAttribute("data-ties");
    items.forEach(function (item, i) {
      if (i === 0 || !ties) { item.classList.remove("tied"); }
      var tied = item.classList.contains("tied");
      if (!tied) { rank = i + 1; }
      item.querySelector("[data-rank]").value = String(rank);
      item.querySelector("[data-place]").textContent = (tied ? "=" : "") + rank;
      item.querySelectorAll("[data-move]").forEach(function (button) {
        var step = Number(button.dataset.move);
        button.disabled = (step < 0 && i === 0) || (step > 0 && i === items.length - 1);
      });
      var tie = item.querySelector("[data-tie]");
      if (tie) { tie.disabled = i === 0; tie.setAttribute("aria-pressed", tied ? "true" : "false"); }
    });
  }

  function announce(form, text) {
    var note = form.querySelector("[data-key-pending]");
    if (note) { note.textContent = text; }
  }

  function rankChanged(form) {
    renumber(form);
    dirty = true;
    update(form);
    draftSoon(form);
  }

  // Moving a response breaks its ties: its own, and those of the responses that had it
  // above them, before and after the move.
  function moveRanked(form, item, step) {
    var list = item.parentNode, items = rankingItems(form), index = items.indexOf(item);
    var target = index + step;
    if (target < 0 || target >= items.length) { return; }
    var oldNext = item.nextElementSibling;
    if (step < 0) { list.insertBefore(item, items[target]); }
    else { list.insertBefore(item, items[target].nextElementSibling); }
    [item, oldNext, item.nextElementSibling].forEach(function (el) { if (el) { el.classList.remove("tied"); } });
    rankChanged(form);
    item.focus();
    announce(form, "Moved to place " + (target + 1) + " of " + items.length + ".");
  }

  function toggleTie(form, item) {
    if (!form.hasAttribute("data-ties") || !item.previousElementSibling) { return; }
    item.classList.toggle("tied");
    rankChanged(form);
    announce(form, item.classList.contains("tied") ? "Tied with the one above: rank " +
      item.querySelector("[data-rank]").value + "." : "No longer tied.");
  }

  function setupRanking(form) {
    var list = form.querySelector("[data-ranking-list]");
    var help = form.querySelector("[data-ranking-help]");
    if (help) { help.hidden = false; }
    rankingItems(form).forEach(function (item) {
      item.tabIndex = 0;
      item.draggable = true;
      var buttons = item.querySelector("[data-ranking-buttons]");
      if (buttons) { buttons.hidden = false; }
    });
    list.addEventListener("click", function (event) {
      var button = event.target.closest("button");
      var item = event.target.closest(".ranking-item");
      if (!button || !item) { return; }
      if (button.hasAttribute("data-move")) { moveRanked(form, item, Number(button.dataset.move)); }
      else if (button.hasAttribute("data-tie")) { toggleTie(form, item); }
    });
    var dragged = null, draggedNext = null;
    list.addEventListener("dragstart", function (event) {
      dragged = event.target.closest(".ranking-item");
      if (!dragged) { return; }
      draggedNext = dragged.nextElementSibling;  // tied with it: no longer, once it moves
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", dragged.dataset.id);
      dragged.classList.add("dragging");
    });
    list.addEventListener("dragover", function (event) {
      if (!dragged) { return; }
      event.preventDefault();
      var over = event.target.closest(".ranking-item");
      if (!over || over === dragged) { return; }
      var box = over.getBoundingClientRect();
      list.insertBefore(dragged, event.clientY > box.top + box.height / 2 ? over.nextElementSibling : over);
    });
    list.addEventListener("drop", function (event) { event.preventDefault(); });
    list.addEventListener("dragend", function () {
      if (!dragged) { return; }
      dragged.classList.remove("dragging", "tied");
      [draggedNext, dragged.nextElementSibling].forEach(function (el) {
        if (el) { el.classList.remove("tied"); }
      });
      dragged = draggedNext = null;
      rankChanged(form);
    });
    renumber(form);
  }

  // Keys on the focused response: the arrows move the focus, the ranking keys move the
  // response or tie it with the one above.
  function onRankingKey(form, key, event) {
    var item = event.target && event.target.closest ? event.target.closest(".ranking-item") : null;
    var items = rankingItems(form), index = items.indexOf(item);
    var fromPage = event.target === document.body || event.target.id === "item-heading";
    if (!item && (key === "ArrowDown" || key === "ArrowUp") && fromPage) {
      items[0].focus();  // from the page (or its heading) into the list
      event.preventDefault();
      return true;
    }
    if (!item || event.target !== item) { return false; }
    if (key === "ArrowUp" || key === "ArrowDown") {
      var next = items[index + (key === "ArrowUp" ? -1 : 1)];
      if (next) { next.focus(); }
      event.preventDefault();
      return true;
    }
    if (!shortcutsOn()) { return false; }
    if (key === form.dataset.upKey) { moveRanked(form, item, -1); }
    else if (key === form.dataset.downKey) { moveRanked(form, item, 1); }
    else if (key === form.dataset.tieKey) { toggleTie(form, item); }
    else { return false; }
    event.preventDefault();
    return true;
  }

  function updateRanking(form) {
    var save = form.querySelector("[data-save]");
    if (save) { save.disabled = document.body.dataset.timeUp === "1"; }
  }

  function update(form) {
    if (form.hasAttribute("data-likert")) { updateLikert(form); return; }
    if (form.hasAttribute("data-pairwise")) { updatePairwise(form); return; }
    if (form.hasAttribute("data-ranking")) { updateRanking(form); return; }
    var coherent = checked(form, "coherent")[0];
    if (coherent === "yes") {
      form.querySelectorAll('input[name="categories"], input[name="most_evident"]').forEach(function (i) { i.checked = false; });
      var text = form.querySelector('textarea[name="description"]');
      if (text) { text.value = ""; }
    } else if (coherent === "no") {
      form.querySelectorAll('input[name="empathy"]').forEach(function (i) { i.checked = false; });
    }
    var ticked = checked(form, "categories");
    // What the stage asks is what the server rendered: a question it does not ask is
    // absent from the form.
    var asksCategories = Boolean(form.querySelector('input[name="categories"]'));
    var asksEmpathy = Boolean(form.querySelector('input[name="empathy"]'));
    var description = form.querySelector('textarea[name="description"]');
    // Characters as the server counts them (code points: an emoji is one, not two).
    var typed = description ? Array.from(description.value.trim()).length : 0;
    var minLength = description ? Number(description.dataset.minLength) : 0;
    var descriptionOk = !description || (typed === 0 ? !description.hasAttribute("data-required-description") : typed >= minLength);
    show(form.querySelector(".q-categories"), coherent === "no");
    show(form.querySelector(".q-description"), coherent === "no");
    show(form.querySelector(".q-empathy"), coherent === "yes");
    show(form.querySelector(".q-most-evident"), coherent === "no" && ticked.length >= 2);
    var count = form.querySelector("[data-description-count]");
    if (count) { count.textContent = typed ? typed + " typed." : ""; }
    form.querySelectorAll(".q-most-evident [data-category]").forEach(function (label) {
      var isTicked = ticked.indexOf(label.dataset.category) !== -1;
      label.hidden = !isTicked;
      if (!isTicked) { label.querySelector("input").checked = false; }
    });
    var mostEvident = checked(form, "most_evident")[0];
    var categoriesOk = !asksCategories || (ticked.length >= 1 && (ticked.length < 2 || Boolean(mostEvident)));
    var complete = coherent === "yes" ? !asksEmpathy || checked(form, "empathy").length === 1
      : coherent === "no" && categoriesOk && descriptionOk;
    var save = form.querySelector("[data-save]");
    if (save) { save.disabled = !complete || document.body.dataset.timeUp === "1"; }
    var hint = form.querySelector("[data-save-hint]");
    if (hint) {
      hint.textContent = complete ? "" : !coherent ? "Answer Yes or No first."
        : coherent === "yes" ? "Choose how much you agree."
        : asksCategories && ticked.length === 0 ? "Tick at least one problem."
        : !categoriesOk ? "Choose the most evident problem."
        : "Describe what is wrong in at least " + minLength + " characters.";
    }
  }

  // Single-key shortcuts can be switched off (WCAG 2.1.4, e.g. for speech input); the
  // choice is remembered in this browser.
  var SHORTCUTS_KEY = "annotate.shortcuts";
  function shortcutsOn() {
    try { return window.localStorage.getItem(SHORTCUTS_KEY) !== "off"; } catch (e) { return true; }
  }
  function setShortcuts(on) {
    try { window.localStorage.setItem(SHORTCUTS_KEY, on ? "on" : "off"); } catch (e) { /* private mode */ }
    document.documentElement.classList.toggle("no-shortcuts", !on);
  }
  document.documentElement.classList.toggle("no-shortcuts", !shortcutsOn());

  // Warn before leaving a page whose answer is changed but not saved yet, and ask
  // before "← Back" (which htmx follows without leaving the page) throws it away.
  var dirty = false;
  window.addEventListener("beforeunload", function (event) {
    if (dirty) { event.preventDefault(); event.returnValue = ""; }
  });
  var LEAVE_UNSAVED = "Your answer to this response candidate is not saved yet. Go back anyway and lose it?";
  document.addEventListener("htmx:confirm", function (event) {
    if (!dirty || !event.detail.elt.hasAttribute("data-back")) { return; }
    event.preventDefault();
    if (window.confirm(LEAVE_UNSAVED)) {
      dirty = false;
      discardDraft(currentForm());
      event.detail.issueRequest(true);
    }
  });

  // Drafts: the item's choices go to the server a moment after each change (and once
  // more if the page is left before that), so a closed tab or another device finds
  // them again. A draft is never an answer; only the save button saves one.
  var DRAFT_DELAY = 800;  // ms after the last change
  var draftTimer = null, draftForm = null;
  function sendDraft(leaving) {
    var form = draftForm;
    window.clearTimeout(draftTimer);
    draftTimer = null;
    draftForm = null;
    if (!form || !form.isConnected || !form.dataset.draftUrl) { return; }
    var data = new FormData(form);
    data.append("draft_sent", String(Date.now()));  // a late request never replaces a newer draft
    if (leaving && navigator.sendBeacon) { navigator.sendBeacon(form.dataset.draftUrl, data); return; }
    fetch(form.dataset.draftUrl, { method: "POST", body: data, credentials: "same-origin", keepalive: true })
      .catch(function () { /* offline: the next change tries again */ });
  }
  function draftSoon(form) {
    window.clearTimeout(draftTimer);
    draftForm = form;
    draftTimer = window.setTimeout(function () { sendDraft(false); }, DRAFT_DELAY);
  }
  function draftCancel() {
    window.clearTimeout(draftTimer);
    draftTimer = null;
    draftForm = null;
  }
  // Going back without saving throws the choices away: the draft too (a post with no
  // choices deletes it).
  function discardDraft(form) {
    draftCancel();
    if (!form || !form.dataset.draftUrl) { return; }
    var data = new FormData();
    var token = form.querySelector('input[name="csrfmiddlewaretoken"]');
    if (token) { data.append("csrfmiddlewaretoken", token.value); }
    fetch(form.dataset.draftUrl, { method: "POST", body: data, credentials: "same-origin", keepalive: true })
      .catch(function () { /* offline: the draft stays, and shows next time */ });
  }
  window.addEventListener("pagehide", function () { if (draftTimer) { sendDraft(true); } });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden" && draftTimer) { sendDraft(true); }
  });

  function setup(root) {
    var form = root.querySelector ? root.querySelector("form[data-annotate]") : null;
    if (!form && root.matches && root.matches("form[data-annotate]")) { form = root; }
    if (!form) { return; }
    form.dataset.openedAt = String(Date.now());
    var mode = form.querySelector("[data-form-mode]");
    if (mode) { mode.value = "js"; }  // this page clears answers that no longer apply itself
    dirty = false;
    pending = "";  // an "M" typed on the previous item does not carry over
    typingStop();
    var toggle = form.querySelector("[data-shortcut-toggle]");
    if (toggle) {
      toggle.checked = shortcutsOn();
      toggle.addEventListener("change", function (event) {
        event.stopPropagation();  // not an answer: the form stays as it was
        setShortcuts(toggle.checked);
      });
    }
    form.addEventListener("change", function (event) {
      dirty = true;
      update(form);
      draftSoon(form);
      // No on a stage whose whole answer to No is a description: the cursor goes to the
      // box, so typing straight away fills it (and triggers no shortcut). With
      // categories to tick the keys stay on them.
      var description = form.querySelector('textarea[name="description"]');
      if (event.target.name === "coherent" && event.target.value === "no" && description &&
          !form.querySelector('input[name="categories"]')) {
        description.focus();
      }
    });
    form.addEventListener("input", function (event) {
      var tag = event.target.tagName, type = event.target.type;
      if (tag === "TEXTAREA" || type === "number" || type === "range") { dirty = true; update(form); draftSoon(form); }
    });
    if (form.hasAttribute("data-likert")) { setupSliders(form); }
    if (form.hasAttribute("data-ranking")) { setupRanking(form); }
    form.addEventListener("htmx:beforeRequest", function () { dirty = false; draftCancel(); });
    form.addEventListener("submit", function () {
      dirty = false;
      draftCancel();
      var spent = form.querySelector('input[name="seconds_spent"]');
      if (spent) { spent.value = ((Date.now() - Number(form.dataset.openedAt)) / 1000).toFixed(1); }
    });
    // htmx sends the form from its own event; fill the time there too.
    form.addEventListener("htmx:configRequest", function (event) {
      event.detail.parameters.seconds_spent = ((Date.now() - Number(form.dataset.openedAt)) / 1000).toFixed(1);
    });
    update(form);
  }

  // After htmx swaps in the next item, bring the panel's top into view (on a phone the
  // save button sat far below it) and move focus to its heading, so keyboard and
  // screen-reader users start at the new candidate.
  function focusNewItem() {
    var panel = document.getElementById("item-panel");
    if (panel) {
      var top = panel.getBoundingClientRect().top;
      if (top < 0 || top > window.innerHeight / 3) { panel.scrollIntoView({ block: "start" }); }
    }
    var heading = document.getElementById("item-heading");
    if (heading) { heading.focus({ preventScroll: true }); }
  }

  function currentForm() { return document.querySelector("form[data-annotate]"); }

  // Typing in a text box (the description) never triggers a shortcut.
  function isTextEntry(target) {
    if (!target || !target.tagName) { return false; }
    if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT") { return true; }
    return target.tagName === "INPUT" && ["checkbox", "radio", "range", "button", "submit", "reset"].indexOf(target.type) === -1;
  }

  // The keys are the server's (studies/shortcuts.py): each answer's input carries its
  // key in data-key, the form the most evident error's in data-most-evident-key. That
  // key then a ticked category's key makes it the most evident error; Escape or any
  // other key cancels it.
  var pending = "";
  function setPending(form, value) {
    pending = value;
    var note = form && form.querySelector("[data-key-pending]");
    if (note) { note.textContent = value ? value.toUpperCase() + ": now the key of the most evident problem (Esc cancels)." : ""; }
  }

  function onKey(event) {
    var form = currentForm();
    if (!form || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    // A slider's number field takes digits as typed; Enter there saves, as elsewhere.
    var numberField = target && target.tagName === "INPUT" && target.type === "number";
    if (isTextEntry(target) && !(numberField && event.key === "Enter")) { return; }
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (form.hasAttribute("data-ranking") && onRankingKey(form, key, event)) { return; }
    var wasPending = pending;
    if (pending) { setPending(form, ""); }
    if (key === "Enter") {
      var save = form.querySelector("[data-save]");
      if (save && !save.disabled && target.tagName !== "A" && target.tagName !== "BUTTON") {
        event.preventDefault();
        form.requestSubmit(save);
      }
      return;
    }
    if (key === "Escape") {
      if (wasPending) { event.preventDefault(); }
      return;
    }
    // Keys are letters and digits (anything else would not be a valid selector).
    if (!shortcutsOn() || !/^[a-z0-9]$/.test(key)) { return; }
    if (form.hasAttribute("data-likert")) { onLikertKey(form, key, event); return; }
    function input(name) {
      return form.querySelector('input[name="' + name + '"][data-key="' + key + '"]');
    }
    function click(element) {
      if (element) { element.click(); event.preventDefault(); }
    }
    if (form.hasAttribute("data-pairwise")) { click(input("choice")); return; }
    var mostEvidentKey = form.dataset.mostEvidentKey;
    if (wasPending && wasPending === mostEvidentKey) {
      var choice = input("most_evident");
      if (choice) {
        // A category's key after it never ticks the category: only a ticked one can
        // be chosen.
        event.preventDefault();
        if (!choice.closest("[data-category]").hidden) { choice.click(); }
        return;
      }
    }
    var coherent = checked(form, "coherent")[0];
    var mostEvident = form.querySelector(".q-most-evident");
    if (input("coherent")) { click(input("coherent")); }
    else if (coherent === "yes") { click(input("empathy")); }
    else if (coherent === "no" && key === mostEvidentKey && mostEvident && !mostEvident.hidden) {
      setPending(form, mostEvidentKey);
      event.preventDefault();
    } else if (coherent === "no") { click(input("categories")); }
  }
  document.addEventListener("keydown", onKey);

  function startTimer() {
    var timer = document.getElementById("timer");
    if (!timer) { return; }
    function tick() {
      // The item panel carries the assignment's current deadline (it moves once the
      // first answer is saved); the bar's is the page's.
      var panel = document.getElementById("item-panel");
      var expires = Date.parse((panel && panel.dataset.deadline) || timer.dataset.expires);
      // Before the first answer is saved the deadline is that answer's, earlier than
      // the batch's time limit; the notes under the bar say which clock this is.
      var firstAnswer = expires < Date.parse(timer.dataset.limit);
      showClockNote(firstAnswer);
      var left = Math.max(0, Math.floor((expires - Date.now()) / 1000));
      var minutes = Math.floor(left / 60), seconds = left % 60;
      timer.textContent = (firstAnswer ? "Time to save a first answer: " : "Time left: ") +
        minutes + ":" + (seconds < 10 ? "0" : "") + seconds;
      timer.classList.toggle("low", left < 300);
      if (left === 0) {
        document.body.dataset.timeUp = "1";
        timer.textContent = "Time is up for this batch";
        var form = currentForm();
        if (form) { update(form); }
        timeUp(timer.dataset.home);
        return;
      }
      window.setTimeout(tick, 1000);
    }
    tick();
  }

  function showClockNote(firstAnswer) {
    var first = document.getElementById("clock-first-answer");
    var full = document.getElementById("clock-time-limit");
    if (first) { first.hidden = !firstAnswer; }
    if (full) { full.hidden = firstAnswer; }
  }

  // The time ran out: say so plainly, what became of the answers and what comes next.
  function timeUp(home) {
    var status = document.getElementById("status");
    if (!status) { return; }
    status.textContent = "The time for this batch ran out. Your answers so far are kept, but " +
      "they will not be counted, and this batch can no longer be saved or submitted. ";
    if (home) {
      var link = document.createElement("a");
      link.href = home;
      link.textContent = "Go back to your page to see what comes next.";
      status.appendChild(link);
    }
    status.classList.add("visible", "time-up");
  }

  function report(message) {
    var status = document.getElementById("status");
    if (status) { status.textContent = message; status.classList.add("visible"); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    setup(document);
    startTimer();
    document.body.addEventListener("htmx:load", function (event) {
      if (event.detail.elt === document.body) { return; }  // the first page load
      setup(event.detail.elt);
      focusNewItem();
    });
    document.body.addEventListener("htmx:afterRequest", function (event) {
      if (event.detail.successful) {
        var status = document.getElementById("status");
        if (status) { status.textContent = ""; status.classList.remove("visible"); }
      }
    });
    document.body.addEventListener("htmx:responseError", function (event) {
      report("Your answer could not be saved (error " + event.detail.xhr.status + "). Earlier answers are safe; please reload the page.");
    });
    document.body.addEventListener("htmx:sendError", function () {
      report("No connection: your answer is not saved yet. Check your connection and press Save again.");
    });
  });
})();
