// The dashboard's only script: copy buttons (data-copy-from = id of the element whose
// text is copied). Everything else works without JavaScript.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy-from]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copyFrom);
  if (!source) return;
  const text = "value" in source ? source.value : source.textContent;
  const done = () => { button.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => fallback(source, done));
  } else {
    fallback(source, done);
  }
});

function fallback(source, done) {
  if ("select" in source) { source.select(); document.execCommand("copy"); done(); }
}
