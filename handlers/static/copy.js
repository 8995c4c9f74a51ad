// Copy buttons: a button[data-copy] copies the text of the element whose id it names. The
// buttons are hidden in the page and shown here, so without script there is no dead button.
(function () {
  "use strict";
  if (!navigator.clipboard) return;
  document.querySelectorAll("button[data-copy]").forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function (e) {
      e.preventDefault(); // a button inside <summary> must not open or close its <details>
      var src = document.getElementById(b.getAttribute("data-copy"));
      if (!src) return;
      navigator.clipboard.writeText(src.tagName === "INPUT" ? src.value : src.textContent).then(function () {
        var label = b.textContent;
        b.textContent = "Copied";
        setTimeout(function () { b.textContent = label; }, 1500);
      });
    });
  });
})();
