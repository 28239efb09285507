// The graph view: a drawing wider than the screen (a phone) opens on its middle,
// where the memory it is about sits, rather than on its left edge.
(function () {
  "use strict";
  var box = document.querySelector(".graph-box");
  if (box && box.scrollWidth > box.clientWidth) {
    box.scrollLeft = (box.scrollWidth - box.clientWidth) / 2;
  }
}());
