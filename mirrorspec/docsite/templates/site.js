// Filter the table list as you type (no network, no libraries).
(function () {
  var input = document.getElementById("filter");
  if (!input) return;
  input.addEventListener("input", function () {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    document.querySelectorAll("#tables tbody tr").forEach(function (row) {
      var text = row.getAttribute("data-search");
      row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  });
})();
