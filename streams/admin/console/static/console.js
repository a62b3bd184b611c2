// Progressive enhancement only: every action is a plain form POST that works without this file.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-open-dialog]").forEach((btn) => {
    btn.addEventListener("click", () => {
      const d = document.getElementById(btn.dataset.openDialog);
      if (d && d.showModal) { d.showModal(); const i = d.querySelector("input:not([type=hidden])"); if (i) i.focus(); }
    });
  });
  document.querySelectorAll("[data-close-dialog]").forEach((btn) => {
    btn.addEventListener("click", () => btn.closest("dialog").close());
  });
  // The confirmation button stays disabled until the exact phrase is typed (the server checks it too).
  document.querySelectorAll("input[data-must-equal]").forEach((input) => {
    const submit = input.form.querySelector("[data-confirm-submit]");
    const check = () => { submit.disabled = input.value.trim().toUpperCase() !== input.dataset.mustEqual; };
    input.addEventListener("input", check); check();
  });
});
