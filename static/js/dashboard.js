// Dashboard figures as PNG: the server renders SVG; this draws it on a canvas (twice
// the size, white background) and saves the canvas as a PNG file. Without
// JavaScript the buttons stay hidden and the SVG download links remain.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var SCALE = 2;

  function save(blob, filename) {
    var url = URL.createObjectURL(blob);
    var link = document.createElement("a");
    link.href = url;
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
  }

  function report(message) {
    var status = document.getElementById("status");
    if (status) {
      status.textContent = message;
      status.classList.add("visible");
    }
  }

  function toPng(svgText, done) {
    var svgUrl = URL.createObjectURL(new Blob([svgText], { type: "image/svg+xml" }));
    var image = new Image();
    image.onload = function () {
      var canvas = document.createElement("canvas");
      canvas.width = Math.ceil(image.naturalWidth * SCALE);
      canvas.height = Math.ceil(image.naturalHeight * SCALE);
      var context = canvas.getContext("2d");
      context.fillStyle = "#ffffff";
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(image, 0, 0, canvas.width, canvas.height);
      URL.revokeObjectURL(svgUrl);
      canvas.toBlob(function (blob) { done(blob); }, "image/png");
    };
    image.onerror = function () {
      URL.revokeObjectURL(svgUrl);
      done(null);
    };
    image.src = svgUrl;
  }

  function download(button) {
    button.disabled = true;
    fetch(button.dataset.svgUrl, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error(response.status); }
        return response.text();
      })
      .then(function (svgText) {
        toPng(svgText, function (blob) {
          button.disabled = false;
          if (blob) { save(blob, button.dataset.filename); } else { report("The figure could not be converted to PNG; download the SVG instead."); }
        });
      })
      .catch(function () {
        button.disabled = false;
        report("The figure could not be loaded; reload the page and try again.");
      });
  }

  function setUp(root) {
    root.querySelectorAll("[data-png-download]").forEach(function (button) {
      button.hidden = false;
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-png-download]");
    if (button) { download(button); }
  });
  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
})();
