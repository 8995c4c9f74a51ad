// Filter boxes: an input[data-filter] narrows the list whose id it names to the labels that
// hold its text (any case); a checked one always stays in view, so what is picked shows. The
// box is hidden in the page and shown here: without script the whole list scrolls in its box.
(function () {
  "use strict";
  document.querySelectorAll("input[data-filter]").forEach(function (box) {
    var list = document.getElementById(box.getAttribute("data-filter"));
    if (!list) return;
    var labels = Array.prototype.slice.call(list.querySelectorAll("label"));
    var texts = labels.map(function (l) { return l.textContent.toLowerCase(); });
    box.hidden = false;
    box.addEventListener("input", function () {
      var q = box.value.trim().toLowerCase();
      labels.forEach(function (l, i) {
        l.hidden = q !== "" && texts[i].indexOf(q) < 0 && !l.querySelector("input:checked");
      });
    });
  });
})();
