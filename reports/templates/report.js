(function(){
  var box=document.getElementById('run-filter');
  if(box){box.addEventListener('input',function(){
    var q=box.value.toLowerCase();
    document.querySelectorAll('#runs tbody tr').forEach(function(tr){
      tr.classList.toggle('hidden', q!=='' && tr.textContent.toLowerCase().indexOf(q)<0);});
  });}
  var only=document.getElementById('only-bad');
  if(only){only.addEventListener('change',function(){
    document.querySelectorAll('#runs tbody tr').forEach(function(tr){
      tr.classList.toggle('hidden', only.checked && tr.dataset.valid==='true');});
  });}
  var all=document.getElementById('expand-all');
  if(all){all.addEventListener('click',function(){
    document.querySelectorAll('#timelines details').forEach(function(d){d.open=true;});});}
})();
